"""The device a model runs on: ``--device auto`` resolved once, and a device torch does not see refused before
anything loads (the command line's check, :func:`evaluators.evaluate`'s, a grid's). torch is imported only where a
value needs it."""

from __future__ import annotations

import logging

from probekit.errors import UsageError


def resolve_device(device: str) -> str:
    """``auto``: ``cuda`` when torch sees a GPU, else ``cpu`` (logged); any other device as given. The one place
    ``auto`` is resolved (torch is imported only for it)."""
    if device != "auto":
        return device
    import torch

    resolved = "cuda" if torch.cuda.is_available() else "cpu"
    logging.getLogger("probekit").info("--device auto: %s", resolved)
    return resolved


def check_device(value: str | None) -> None:
    """A ``--device`` torch does not see (cuda, cuda:N, mps) is a usage error, raised before anything loads (the
    command line's check, and :func:`evaluate`'s); torch is imported for these values only. Not in the argparse
    type: a grid's spec is parsed on a machine that need not have its workers' GPUs. GPUs are counted as
    ``torch.cuda.device_count`` counts them, through NVML where it can: CUDA does not start, so a fork stays safe
    and CALUM can still narrow ``CUDA_VISIBLE_DEVICES`` to cuda:N."""
    if value in (None, "auto", "cpu"):
        return
    import torch

    if value == "mps":
        if not torch.backends.mps.is_available():
            raise UsageError(f"argument --device: mps: torch {torch.__version__} sees no MPS device (an Apple GPU): "
                             f"use --device cpu or auto")
        return
    count = torch.cuda.device_count()
    if not count:
        build = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a build without CUDA"
        raise UsageError(f"argument --device: {value}: torch sees no CUDA device (torch {torch.__version__}, "
                         f"{build}): use --device cpu or auto")
    index = int(value.partition(":")[2] or 0)
    if index >= count:
        raise UsageError(f"argument --device: {value}: torch sees {count} CUDA device{'s' * (count > 1)} (cuda:0"
                         f"{f' to cuda:{count - 1}' if count > 1 else ''})")
