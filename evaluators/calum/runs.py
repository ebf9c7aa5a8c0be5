"""CALUM, declared on its run (:mod:`evaluators.protocols`), as :func:`evaluators.evaluate` runs it: fine-tune a
sequence classifier on a task's training split and predict every variant of its validation split (and a drawn test
split); accuracy, C_R, C_S per seed."""

from __future__ import annotations

from pathlib import Path

from evaluators.calum.params import CalumEvalParams
from evaluators import protocols
from evaluators.protocols import protocol
from evaluators.shared.calls import Run, params_file
from probekit.device import resolve_device
from probekit.errors import UsageError
from probekit.outputs.paths import out_folder

@protocol("calum", title="CALUM (a fine-tuned classifier)", paper="calum", reads={"calum_eval": CalumEvalParams},
          options={o: f"calum_eval.{o}" for o in ("seeds", "limit", "eval_limit", "max_steps", "split", "dtype")},
          profiled=True, stages=("calum_report",), limits=("calum_eval.limit", "calum_eval.eval_limit"),
          results=("results/calum",))
def calum(model: str, data, out, *, params=None, device: str = "auto", force: bool = False, task: str,
          multitask: str | None = None, **options) -> list[Run]:
    """CALUM on ``task`` (rte, mrpc, ...; ``data``: its dataset, or a folder of ``<task>/`` ones); ``multitask``: a
    ``calum_eval.multitask`` group trained with it; ``options``: the record's, each a ``calum_eval`` setting (None:
    the params')."""
    out_folder(out, "predictions.jsonl, metrics.json and the model are written inside it", kind="results",
               force=force)
    params = params_file(params)
    profile = params.profile  # recorded in metrics.json (a bad value fails before any work)
    cp = protocols.get("calum").settings(params, **options)["calum_eval"]
    if multitask and multitask not in cp.multitask:
        raise UsageError(f"--multitask {multitask}: the groups in {params.label} calum_eval.multitask are "
                         f"{', '.join(cp.multitask) or 'none'}")
    from evaluators.calum import finetune
    from probekit.tokens.refs import resolve_model

    ref = resolve_model(model, params.models(), params.label)
    from evaluators.shared import applies

    device = resolve_device(device)
    if applies.skip("calum", ref, device, [Path(out)], params):
        return []
    m = finetune.run(ref, Path(data), task, Path(out), cp, group=multitask, device=device, profile=profile)
    return [Run(Path(out), Path(data), m)]
