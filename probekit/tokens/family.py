"""A model's family (``mlm``, ``causal`` or ``seq2seq``: which scoring rules apply) from its config and tokenizer,
no weights read: ``--scoring auto`` (:mod:`evaluators.engine.models`), which protocols apply to a model
(:mod:`evaluators.shared.applies`) and which models' tokenizers ParaRel's one-token filter reads (the masked LMs:
:mod:`generators.pararel`)."""

from __future__ import annotations

from probekit.errors import UsageError
from probekit.tokens.refs import ModelRef


def detect_family(config, tokenizer) -> str:
    """``--scoring auto``: the family the checkpoint's architecture names, else what its config type supports
    (a BERT-type encoder without architecture is a masked LM when its tokenizer has a mask token).

    One class that serves as both heads (XLM's ``XLMWithLMHeadModel``: the xlm-mlm-* checkpoints are masked
    LMs, the xlm-clm-* ones causal) is decided by the config's ``causal`` flag; a model no rule scores (XLNet,
    a permutation LM; a causal XLM) is a :class:`UsageError` that says so."""
    from transformers import MODEL_FOR_CAUSAL_LM_MAPPING, MODEL_FOR_MASKED_LM_MAPPING  # {config class: model class}

    check_scorable(config)
    masked_class = MODEL_FOR_MASKED_LM_MAPPING[type(config)] if type(config) in MODEL_FOR_MASKED_LM_MAPPING else None
    for arch in config.architectures or ():
        if arch.endswith("ForMaskedLM"):
            return "mlm"
        if arch.endswith("ForConditionalGeneration") and config.is_encoder_decoder:
            return "seq2seq"  # before the masked mapping: transformers 4 maps BART's masked LM to this class
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            if masked_class is not None and arch == masked_class.__name__:  # also the masked head (XLM)
                return masked_family(config, tokenizer, arch)
            return "causal"
    if config.is_encoder_decoder:
        return "seq2seq"
    if masked_class is not None and tokenizer.mask_token is not None and not getattr(config, "causal", False):
        return "mlm"
    if masked_class is not None and MODEL_FOR_CAUSAL_LM_MAPPING.get(type(config), None) is masked_class:
        return masked_family(config, tokenizer, masked_class.__name__)  # XLM without a mask token: an error
    if type(config) in MODEL_FOR_CAUSAL_LM_MAPPING:
        return "causal"
    raise UsageError(f"a {type(config).__name__} model is none of the families probekit scores (masked, causal, "
                     f"seq2seq LM): pass --scoring if it is one")


def masked_family(config, tokenizer, arch: str) -> str:
    """The family of an architecture that is its config type's masked-LM class: a masked LM unless the config
    says ``causal`` (XLM's flag; no such class is causal-only); a masked LM needs a mask token."""
    if getattr(config, "causal", False):
        return "causal"
    if tokenizer.mask_token is None:
        raise UsageError(f"a {arch} model trained as a masked LM (config causal: false) needs a mask token, and "
                         f"its tokenizer has none: give it its checkpoint's tokenizer")
    return "mlm"


def check_scorable(config, name: str | None = None) -> None:
    """Refuse, whatever ``--scoring`` says, a model that none of the rules scores: XLNet (a permutation LM: no
    masked-LM head, and without a permutation mask each position attends to the whole sequence, so the
    causal rules would read the answer), and XLM trained causally (its own ``cache`` argument, not the
    ``past_key_values`` the causal rules reuse)."""
    what = f"--model {name}: a" if name else "a"
    if config.model_type == "xlnet":
        raise UsageError(f"{what} {type(config).__name__} model (XLNet) is a permutation language model, which no "
                         f"probekit rule scores: neither masked (it has no masked-LM head) nor causal (it sees the "
                         f"whole sequence); evaluate a masked LM (e.g. BERT, RoBERTa), a causal or a seq2seq LM")
    if config.model_type == "xlm" and getattr(config, "causal", False):
        raise UsageError(f"{what} causal XLM model (config causal: true, an xlm-clm-* checkpoint) is not scored: "
                         f"its cache is not the past_key_values the causal rules reuse; the masked XLMs "
                         f"(xlm-mlm-*, causal: false) are scored with --scoring mlm")


def family_of(ref: ModelRef) -> str:
    """The family of ``ref`` (mlm, causal or seq2seq) from its config and tokenizer only, as ``--scoring auto``
    detects it: no weights are read (which protocols apply, :mod:`evaluators.shared.applies`)."""
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    transformers.logging.set_verbosity_error()
    config = AutoConfig.from_pretrained(ref.location, **ref.pinned)
    check_scorable(config, ref.name)
    return detect_family(config, AutoTokenizer.from_pretrained(ref.location, **ref.pinned))
