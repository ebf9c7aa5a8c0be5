"""``probes rehearse --estimate WORKDIR``: a rehearsal's measured stage times (its timings.json) turned into the
paper profile's expected time per stage and in total. The scaling it assumes, per stage:

- a fixed part, the cheapest stage's time in the rehearsal (a process start, imports, reading params), is not
  scaled; the rest is (below);
- work: the learning curves (MC-MLM, MLM-BASELINE, MC-QA, ESIM) by Σ sizes × seeds × epochs (the paper profile's
  over the rehearsal's: ``--max-size`` and the cut epochs); zero-shot by the examples (each metrics.json's ``n``
  over the rows of its ``data`` file: the paper profile has no limit); other stages not scaled (ParaRel, §8 and
  CALUM's capped examples: the estimate is a lower bound for them, and says so);
- models: a stage of the rehearsal's model stands for the same stage of each of the paper's models of its paper
  (``runs``), its time × the model's parameters over the rehearsal model's (compute ∝ parameters: true of the
  matrix products, not of a tiny model's overheads, so an upper bound for small models on a CPU).

The result is CPU time, as the rehearsal ran. On a GPU: zero-shot at PERF.md's measured rates (one H100, fp32, the
scorer: bert-base 3,737 examples/s, roberta-large 1,964), other models by parameters between them; the training
stages have no measured GPU figure, so none is claimed."""

from __future__ import annotations

import json
from pathlib import Path

PARAMS_M = {"bert-base-uncased": 110, "bert-large-uncased": 340, "bert-large-uncased-whole-word-masking": 340,
            "roberta-base": 125, "roberta-large": 355, "bert-base-cased": 109, "bert-large-cased": 335,
            "bert-large-cased-whole-word-masking": 335, "albert-base-v2": 12, "albert-xxlarge-v2": 223,
            "electra-small": 14, "electra-large": 335, "gpt2": 124, "gpt2-large": 774, "bart-base": 140,
            "t5-base": 220, "t5-large": 770, "kobert": 92, "koelectra": 110, "kogpt2": 125, "kobart": 124,
            "roberta-base-1B-1": 125, "roberta-base-100M-1": 125, "roberta-base-10M-1": 125,
            "roberta-med-small-1M-1": 45}
"""Millions of parameters of the paper profile's models (their model cards and papers)."""
GPU_RATE = {"bert-base-uncased": 3737, "roberta-large": 1964}
"""Zero-shot examples per second on one H100, fp32 (../shared/PERF.md, "The landed scorer")."""
PAPER_OF = {"zeroshot": "olmpics", "zeroshot_release": "olmpics", "zeroshot_grid": "olmpics", "audit": "olmpics",
            "zeroshot_random": "olmpics", "curve_lr": "olmpics", "curve": "olmpics", "curve_random": "olmpics",
            "mcqa": "olmpics", "mcqa-mc_mlm": "olmpics",
            "curve_release": "olmpics", "mcqa_release": "olmpics", "mcqa_release-mc_mlm": "olmpics",
            "pararel": "pararel", "consistency": "consistency", "consistency-ablation": "consistency", "calum": "calum",
            "calum-multitask": "calum",
            "calum-korean": "calum"}
"""The paper whose ``runs`` list each stage family of dvc.yaml that runs a model repeats per model."""
ZEROSHOT = ("zeroshot", "zeroshot_release", "zeroshot_grid", "zeroshot_random")


def _units(p: dict, family: str) -> float | None:
    """Σ sizes × seeds × epochs of a curve family in params ``p`` (None: not a curve)."""
    def run(section: str, epochs) -> float:
        return sum(p[section]["sizes"]) * len(p[section]["seeds"]) * (epochs or 1)

    if family in ("curve", "curve_random", "curve_release"):
        return run("curve", (p["curve"].get("training") or {}).get("epochs"))
    if family in ("curve_baseline", "curve_release_baseline"):
        return run("curve", (p.get("mlm_baseline") or {}).get("epochs"))
    if family in ("mcqa", "mcqa-mc_mlm", "mcqa_release", "mcqa_release-mc_mlm"):
        return run("mcqa", (p["mcqa"].get("training") or {}).get("epochs"))
    if family in ("mcqa_baseline", "mcqa_baseline-mc_mlm", "mcqa_release_baseline", "mcqa_release_baseline-mc_mlm"):
        return run("mcqa", (p["mcqa"].get("esim_training") or {}).get("epochs"))
    return None


def _examples(work: Path, folder: str) -> tuple[int, int]:
    """(examples scored, rows of their data files) over the metrics.json files under ``work/folder``."""
    scored = rows = 0
    for path in (work / folder).rglob("metrics.json") if (work / folder).is_dir() else []:
        m = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(m.get("n"), int):
            continue
        data = work / str(m.get("data") or "")
        scored += m["n"]
        rows += sum(1 for line in data.open(encoding="utf-8") if line.strip()) if data.is_file() else m["n"]
    return scored, rows


def _folder(family: str, alias: str) -> str:
    """A zero-shot stage's results folder (dvc.yaml's ``outs``)."""
    if family == "zeroshot_random":
        return f"results/zeroshot/random-{alias}"
    return f"results/{'release' if family == 'zeroshot_release' else family}/{alias}"


def _size_m(folder: str) -> float | None:
    """Millions of parameters of a model folder: its weights' bytes / 4 (float32)."""
    files = [f for f in Path(folder).glob("*") if f.suffix in (".safetensors", ".bin")]
    return sum(f.stat().st_size for f in files) / 4e6 if files else None


def estimate(timings: dict[str, float], rehearsal: dict, paper: dict, work: Path) -> list[dict]:
    """Per stage of the rehearsal: {stage, measured, expected, how}; ``rehearsal``, ``paper``: the params."""
    fixed = min(timings.values(), default=0.0)
    aliases = {a: _size_m(str(f)) for a, f in (rehearsal.get("models") or {}).items()}
    rows = []
    for stage, seconds in timings.items():
        family, _, item = stage.partition("@")
        factor, how = 1.0, []
        units = _units(rehearsal, family), _units(paper, family)
        if units[0] and units[1]:
            factor *= units[1] / units[0]
            how.append(f"Σ sizes×seeds×epochs {units[0]:g} → {units[1]:g}")
        elif family in ZEROSHOT and item in aliases:
            scored, full = _examples(work, _folder(family, item))
            if scored and full != scored:
                factor *= full / scored
                how.append(f"examples {scored} → {full}")
        elif family not in ("curve_lr",) and PAPER_OF.get(family) in ("pararel", "consistency", "calum"):
            how.append("examples not scaled (a lower bound)")
        alias = next((a for a in aliases if item == a or item.startswith(a + "-")), None)
        models = []
        if alias is not None and family in PAPER_OF:
            models = list(((paper.get("runs") or {}).get(PAPER_OF[family])) or [])
        if models and aliases[alias]:
            ratio = sum(PARAMS_M.get(m, aliases[alias]) for m in models) / aliases[alias]
            factor *= ratio
            how.append(f"{len(models)} models, Σ parameters / {aliases[alias]:.2g}M")
        expected = fixed * max(len(models), 1) + (seconds - fixed) * factor
        row = {"stage": stage, "measured": seconds, "expected": expected, "how": "; ".join(how) or "as measured"}
        if family in ZEROSHOT and models:
            scored, full = _examples(work, _folder(family, item))
            rate = lambda m: GPU_RATE.get(m) or GPU_RATE["bert-base-uncased"] * 110 / PARAMS_M.get(m, 110)   # noqa: E731
            row["gpu"] = sum(full / rate(m) for m in models)
        rows.append(row)
    return rows


def show(work: Path) -> str:
    """The estimate of the rehearsal in ``work`` as a table (the text ``--estimate`` prints)."""
    import yaml

    from probekit.errors import UsageError
    from probekit.params import compose

    path = work / "timings.json"
    if not path.is_file():
        raise UsageError(f"--estimate {work}: no timings.json here; give a probes rehearse --workdir after it ran")
    timings = json.loads(path.read_text(encoding="utf-8"))["stages"]
    rehearsal = yaml.safe_load((work / "params.yaml").read_text(encoding="utf-8"))
    rows = estimate(timings, rehearsal, compose(work / "conf", ["profile=paper"]), work)
    from probes.progress import clock

    lines = ["| stage | rehearsal | paper profile (CPU) | GPU (zero-shot, PERF.md) | scaling |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['stage']} | {clock(r['measured'])} | {clock(r['expected'])} | "
              f"{clock(r['gpu']) if 'gpu' in r else ''} | {r['how']} |" for r in rows]
    total = sum(r["expected"] for r in rows)
    gpu = sum(r.get("gpu", 0) for r in rows)
    return "\n".join(lines) + (f"\n\nIn all: {clock(total)} of CPU time by this scaling (the rehearsal: "
                               f"{clock(sum(timings.values()))}); zero-shot on one H100: {clock(gpu)}. "
                               "The scaling assumed: probes/rehearse_estimate.py.")
