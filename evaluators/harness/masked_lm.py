"""The harness model type ``probekit-mlm``: masked LMs (BERT, RoBERTa, ...) scored in lm-evaluation-harness with
probekit's pseudo-log-likelihood.

The harness asks a model for ``log p(continuation | context)``, which a masked LM does not define; probekit
answers with PLL-word-l2r (Kauf & Ivanova 2023): each token of the continuation in turn is masked together with
the later tokens of its word ("we mask not only the target token, but also all within-word tokens to the right
of the target"), and the log-probabilities of the masked tokens at their positions are summed. The text read is
``context + continuation`` tokenized once with the model's special tokens, so the context is visible and the
continuation is tokenized in context (a byte-level BPE's ``Ġolder``, not ``older``); whitespace at the start of
the continuation is moved into the context, since it belongs to no word.

* A task with an empty context whose choices are the filled statements (``doc_to_text: ""``,
  ``target_delimiter: ""``) gets the PLL of every token of each statement: exactly probekit's ``pll-statement``
  rule (``probes evaluate zeroshot --rule pll-statement``), minicons' and Salazar et al.'s sentence score.
* A context+choice task scores the choice's tokens given the context only: the harness passes no text after
  the blank, so this is probekit's ``pll`` rule on a stem whose ``[MASK]`` ends it.

``loglikelihood_rolling`` is the PLL of the whole text (a perplexity task's documents must fit the model: no
windows). ``is_greedy`` is True when every continuation token is the head's argmax at its masked position.
Generation is not supported. All of a call's requests are scored in one batched pass (probekit's runner:
length-sorted batches, ``batch_size=auto`` halving on a GPU's out-of-memory).

Importing this module registers the model type (lm-eval 0.4.13 finds no plugin models by entry points); it is
the only probekit module that imports ``lm_eval``, an optional extra.
"""

from __future__ import annotations

import logging

import lm_eval.models  # noqa: F401  the harness's own model types first: its registry imports them only while empty
import numpy as np
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from evaluators.engine import masked
from evaluators.engine.models import load_lm
from evaluators.engine.runner import Runner
from evaluators.engine.scorer import max_length
from probekit.errors import DataError, UsageError, shown
from probekit.tokens.statements import Statements, encode_spans, text_span

log = logging.getLogger("probekit")
NAME = "probekit-mlm"


def harness_batch_size(value) -> int | str:
    """The harness's ``batch_size`` (an int, ``"8"``, ``auto`` or ``auto:N``) as probekit's runner takes it."""
    if value is None:
        return "auto"
    text = str(value).strip()
    if text == "auto" or text.startswith("auto:"):
        return "auto"
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < 1:
        raise UsageError(f"{NAME}: batch_size must be a positive integer or auto, got {shown(value)}")
    return size


def harness_device(device: str | None) -> str:
    """``auto`` (or nothing): cuda when torch sees a GPU, else cpu. A CUDA device without a GPU falls back to
    the CPU with a warning, as the harness's own ``hf`` model does: its CLI asks for ``cuda:0`` by default."""
    import torch

    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        log.warning("%s: device %s asked for, but torch sees no GPU: running on the CPU", NAME, device)
        return "cpu"
    return str(device)


@register_model(NAME)
class ProbekitMaskedLM(LM):
    """A masked LM scored by PLL-word-l2r. Harness model args (strings): ``pretrained`` (a Hub id, a folder,
    ``pkg:<package>`` or an alias of ``params``' ``models``), ``device`` (auto), ``dtype`` (float32),
    ``batch_size`` (the harness's; auto), ``seed`` (0), ``params`` (a probekit params file for model aliases;
    default ./params.yaml if there is one), ``revision`` (a Hub branch, tag or commit, as the harness's ``hf``
    takes it)."""

    def __init__(self, pretrained: str | None = None, device: str | None = "auto", dtype: str = "float32",
                 batch_size: int | str | None = "auto", max_batch_size: int | None = None, seed: int = 0,
                 params: str | None = None, revision: str | None = None, **unknown):
        super().__init__()
        if unknown:
            raise UsageError(f"{NAME}: unknown model_args {', '.join(sorted(unknown))} (it takes pretrained, "
                             f"device, dtype, batch_size, seed, params, revision)")
        if not pretrained:
            raise UsageError(f"{NAME}: give the model as --model_args pretrained=<Hub id, folder or pkg:package>")
        from probekit.params import read_params
        from probekit.tokens.refs import resolve_model

        settings = read_params(params)
        aliases = settings.models()
        if revision:   # pinned as a params entry would pin it: model, config and tokenizer at that revision
            aliases = {**aliases, str(pretrained): {"id": str(pretrained), "revision": str(revision)}}
        ref = resolve_model(str(pretrained), aliases, settings.label)
        self._device_name = harness_device(device)
        try:
            loaded = load_lm(ref, scoring="mlm", device=self._device_name, seed=int(seed), dtype=str(dtype))
        except UsageError as exc:
            raise UsageError(f"{NAME} scores masked LMs only: {exc}") from None
        if not loaded.head_pretrained:
            raise UsageError(f"{NAME}: --model_args pretrained={ref.name}: the checkpoint has no trained masked-LM "
                             f"head (it was newly initialised), so its pseudo-log-likelihoods mean nothing; give a "
                             f"checkpoint saved with its MLM head (e.g. bert-base-uncased)")
        self.loaded = loaded
        self.runner = Runner(loaded.model, loaded.tokenizer, batch_size=harness_batch_size(batch_size),
                             progress=True)
        self.max_length = max_length(loaded.model, loaded.tokenizer)

    @property
    def tokenizer_name(self) -> str:
        return self.loaded.tokenizer.name_or_path.replace("/", "__")

    def loglikelihood(self, requests) -> list[tuple[float, bool]]:
        """PLL-word-l2r of each request's continuation given its context, and whether it is greedy."""
        texts, spans = [], []
        for i, request in enumerate(requests):
            context, continuation = request.args
            if not continuation.strip():
                raise DataError(f"{NAME}: request {i} has an empty continuation (context {shown(context)}): "
                                f"a masked LM scores the continuation's tokens, and it has none")
            stripped = continuation.lstrip()
            context += continuation[:len(continuation) - len(stripped)]
            texts.append(context + stripped)
            spans.append(text_span(texts[-1], len(context)))
        scores, greedy = self._score(texts, spans)
        results = [(float(s), bool(g)) for s, g in zip(scores.tolist(), greedy.tolist())]
        for request, result in zip(requests, results):
            self.cache_hook.add_partial("loglikelihood", request.args, result)
        return results

    def loglikelihood_rolling(self, requests) -> list[float]:
        """PLL-word-l2r of each whole text (0 for a text without a token)."""
        texts = [request.args[0] for request in requests]
        scored = [i for i, text in enumerate(texts) if text.strip()]
        scores, _ = self._score([texts[i] for i in scored], [text_span(texts[i]) for i in scored])
        results = [0.0] * len(texts)
        for i, score in zip(scored, scores.tolist()):
            results[i] = float(score)
        for request, result in zip(requests, results):
            self.cache_hook.add_partial("loglikelihood_rolling", request.args, result)
        return results

    def generate_until(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError(f"{NAME} scores; it does not generate text: a masked LM has no left-to-right "
                                  f"decoder (use a task whose output_type is multiple_choice, loglikelihood or "
                                  f"loglikelihood_rolling)")

    def _score(self, texts: list[str], spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """PLL scores and greedy flags of each text's span, each distinct (text, span) scored once, in one
        batched pass over all of them."""
        if not texts:
            return np.zeros(0), np.zeros(0, bool)
        index: dict[tuple[str, tuple[int, int]], int] = {}
        rows = [index.setdefault((text, span), len(index)) for text, span in zip(texts, spans)]
        unique = list(index)
        st = encode_spans(self.loaded.tokenizer, [t for t, _ in unique], [s for _, s in unique],
                          [f"request text {shown(t, 60)}" for t, _ in unique])
        self._check_length(st)
        scores, greedy = self.runner.fitting(lambda: masked.pll_hits(self.runner, st))
        return scores[rows], greedy[rows]

    def _check_length(self, st: Statements) -> None:
        for row, ids in enumerate(st.ids):
            if len(ids) > self.max_length:
                raise DataError(f"{NAME}: {st.example_ids[row]} is {len(ids)} tokens and the model reads at most "
                                f"{self.max_length} (a masked LM has no sliding window here)")
