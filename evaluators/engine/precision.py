"""What a model's forward accepts, and its logits computed in float32.

``forward_api(model)`` reads the forward signature once: the name of the key/value cache argument (``cache``
since transformers 5.x deprecated ``past_key_values``; ``past_key_values`` before), whether it takes
``position_ids``, and whether it can compute the logits of chosen positions only (``logits_to_keep``; older
releases call it ``num_logits_to_keep`` and take a count only, so it is not used there). ``float32_head(model)``
makes a reduced-precision (bf16, fp16) model's output projection compute in float32 on the checkpoint's own
weights (:mod:`evaluators.engine.checkpoint_head`), so log-probabilities are not read off logits rounded to 8 bits
of mantissa, nor off output rows rounded at load; a float32 model is left as it is.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import torch
import transformers


@dataclass(frozen=True)
class ForwardApi:
    """What ``model.forward`` takes by name (``**kwargs`` alone promises nothing)."""
    cache: str | None        # "cache", "past_key_values" or None
    positions: bool          # takes position_ids
    keep: bool               # takes logits_to_keep (a tensor of positions)
    use_cache: bool          # takes use_cache

    def kept(self, positions: torch.Tensor | None) -> dict:
        """The keyword that computes the logits of ``positions`` only (all when None or unsupported)."""
        return {"logits_to_keep": positions} if self.keep and positions is not None else {}

    def logits(self, out, positions: torch.Tensor | None) -> torch.Tensor:
        """``out``'s logits at ``positions`` (``[batch, len(positions), vocab]``), whether or not the model
        computed only those."""
        return out.logits if positions is None or self.keep else out.logits[:, positions]

    def cache_of(self, out):
        """The key/value cache a forward returned (``out.cache``, else ``out.past_key_values``)."""
        if self.cache == "cache":
            return out.get("cache")
        return out.get("past_key_values")


def forward_api(model) -> ForwardApi:
    """The arguments ``model.forward`` names in its signature."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        params = {}
    cache = next((name for name in ("cache", "past_key_values") if name in params), None)
    return ForwardApi(cache, "position_ids" in params, "logits_to_keep" in params, "use_cache" in params)


def plain_dynamic_cache(cache) -> bool:
    """Whether ``cache`` is the standard growing key/value cache of full-attention layers, the one whose rows
    can be selected and extended by any continuation (not a sliding-window, hybrid, static or recurrent one)."""
    if type(cache) is not transformers.DynamicCache or not hasattr(cache, "batch_select_indices"):
        return False
    layers = getattr(cache, "layers", None)
    if layers is None:  # transformers < 4.54: one list of full keys and values per layer
        return True
    return all(type(layer) is transformers.DynamicLayer for layer in layers)


def _linear32(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ weight.T + bias`` in float32 (``weight`` and ``bias`` are float32 already)."""
    return torch.nn.functional.linear(x.float(), weight, bias)


@contextmanager
def float32_head(model) -> Iterator[None]:
    """Within the block, the model's output projection (a linear layer of reduced precision) computes its logits
    in float32 from the checkpoint's own weights, held as float32 on the model's device for the block's duration
    (the full ``[vocab, hidden]`` matrix: 94 MB for bert-base, 154 MB for gpt2, 206 MB for roberta-large; the
    loaded weights upcast where the checkpoint does not hold them). What follows it (a logit soft-cap, BART's final
    bias) then runs in float32 too. A float32 model, and output embeddings that are not a projection onto the
    vocabulary (DeBERTa-v2's non-legacy head: its MLM transform's dense layer, its projection a matmul with the
    input embeddings: its logits stay in its dtype), are left as they are."""
    from evaluators.engine.checkpoint_head import projection, projection32

    head = projection(model)
    if head is None:
        yield
        return
    weight, bias = projection32(model)
    handle = head.register_forward_hook(lambda module, args, _: _linear32(args[0], weight, bias))
    try:
        yield
    finally:
        handle.remove()
