"""The models CALUM fine-tunes, loaded from a checkpoint: its tokenizer (padding with the end-of-text token
where it has no padding token), a sequence classifier with a new head for the task's labels, or MT-DNN's
shared encoder with one new head per task (``multitask.MultitaskClassifier``); each head drawn under the run's
seed (``transformers.set_seed``)."""

from __future__ import annotations

from evaluators.engine.models import weights
from probekit.errors import UsageError
from probekit.tokens.refs import ModelRef


def quiet() -> None:
    """transformers' load reports and bars say the head is new, which is the protocol here (logged once)."""
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()


def load_tokenizer(ref: ModelRef):
    """The checkpoint's tokenizer, with a padding token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(ref.location, **ref.pinned)
    if tokenizer.pad_token is None:   # GPT-2: pad with the end-of-text token (the model reads the last real one)
        if tokenizer.eos_token is None:
            raise UsageError(f"--model {ref.name}: its tokenizer has neither a padding nor an end-of-text token")
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_classifier(ref: ModelRef, tokenizer, labels: list[str], seed: int):
    """The checkpoint with a new classification head for ``labels``, drawn under ``seed`` (a head of another
    size in the checkpoint is replaced); it pads with ``tokenizer``'s padding token."""
    import transformers

    transformers.set_seed(seed)
    return _classifier(ref, tokenizer, labels, seed)


def _classifier(ref: ModelRef, tokenizer, labels: list[str], seed: int):
    """The checkpoint as a sequence classifier for ``labels``, its new head drawn from the current random state."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(ref.location, num_labels=len(labels), id2label=dict(enumerate(labels)),
                                        label2id={name: i for i, name in enumerate(labels)},
                                        pad_token_id=tokenizer.pad_token_id, **ref.pinned)
    try:
        model = weights(AutoModelForSequenceClassification, ref, seed, config=config, ignore_mismatched_sizes=True,
                        dtype=torch.float32)[0]
    except ValueError as exc:
        raise UsageError(f"--model {ref.name}: no sequence classifier for it ({exc})") from None
    return model


def load_own_heads(ref: ModelRef, tokenizer, tasks: dict[str, list[str]], seed: int):
    """An ``OwnHeadsClassifier`` (``calum_eval.multitask_heads: own``): the checkpoint loaded as each task's own
    sequence classifier in turn, after one ``set_seed(seed)`` (the original's ``MultitaskModel.create`` loads them
    in turn, ``multitask-transformers/model.py`` lines 27-43), the first one's encoder shared by all."""
    import transformers

    from evaluators.calum.multitask import OwnHeadsClassifier

    transformers.set_seed(seed)
    return OwnHeadsClassifier({t: _classifier(ref, tokenizer, labels, seed) for t, labels in tasks.items()}, tasks)


def load_multitask(ref: ModelRef, tasks: dict[str, list[str]], seed: int):
    """A ``MultitaskClassifier``: the checkpoint's encoder and one new head per task (in ``tasks``' order)."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModel

    from evaluators.calum.multitask import MultitaskClassifier

    config = AutoConfig.from_pretrained(ref.location, **ref.pinned)
    if config.is_encoder_decoder:
        raise UsageError(f"--model {ref.name}: the multitask model shares an encoder or a decoder-only model; "
                         f"a {type(config).__name__} model is encoder-decoder")
    transformers.set_seed(seed)
    encoder = weights(AutoModel, ref, seed, config=config, dtype=torch.float32)[0]
    last = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in config.architectures or ())
    return MultitaskClassifier(encoder, tasks, pool_last=last)
