"""The oLMpics report: per probe a table in the layout of the paper's Table 2 with 95% bootstrap intervals over
dev examples, paired differences between rows, the medal summary (the paper's Table 12), the ``dvc metrics``
JSON and the learning-curve plots. The numbers come from :mod:`evaluators.olmpics.results`.

Under a row whose model id is a checkpoint the paper evaluated (``hub_ids`` in published.yaml), and under a baseline
row (``baselines``), a ``↳ paper:`` row gives the published numbers of the probe's table (Tables 2, 3, 5, 7-11), as
the ParaRel and CALUM reports do."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from tabulate import tabulate

from evaluators.shared import applies, smoke
from evaluators.shared.bootstrap import MAX_INTERVAL
from evaluators.olmpics import plots as olmpics_plots
from evaluators.olmpics.lr_selection import describe as describe_lr
from evaluators.olmpics.metrics import ws_weights
from evaluators.olmpics.results import CONTROLS, MAIN, NO_HEAD, SETTINGS, Probe, analyse, load, medal_rule
from evaluators.olmpics.flags import constant_mark, degenerate, degenerate_mark, flag_lines
from evaluators.shared.report import deviation, iter_metrics
from probekit import yamlfile
from probekit.outputs import atomic
from probekit.errors import DataError

MEDAL_WORDS = {"✓": "success", "✓–": "partial", "": "none", "n/a": "n/a"}
PUBLISHED = Path(__file__).with_name("published.yaml")
CAPPED_MARK = "⚠ capped"


@lru_cache(maxsize=None)
def load_published() -> dict:
    """published.yaml: the paper's tables, its model names by Hub id and its baseline row by ours."""
    return yamlfile.read(PUBLISHED)


def published_row(probe: Probe, label: str) -> dict | None:
    """``{table, title, row, values: {column: value or None}}``: the paper's row for this report row (its Hub id,
    or a baseline's name) in the table of the probe under its protocol; None when the paper has none."""
    published = load_published()
    meta = next(iter(probe.results[label].values())).meta
    name = (published["baselines"].get(meta["baseline"]) if meta["baseline"]
            else published["hub_ids"].get(meta.get("model_id")))
    for key, table in published["tables"].items():
        if (table["probe"], table["protocol"]) == (meta["probe"], probe.protocol) and name in table["rows"]:
            return {"table": key, "title": table["title"], "row": name,
                    "values": dict(zip(table["columns"], table["rows"][name]))}
    return None


def _paper_cell(value) -> str:
    return "—" if value is None else f"{value:g}"


def _published_source(tables: dict) -> str:
    """The footnote of a probe's ``↳ paper:`` rows: which table, and how its numbers differ from ours."""
    which = ", ".join(f"Table {key.removeprefix('table')} ({title})" for key, title in tables.items())
    return (f"the published numbers of {which} (Talmor et al. 2020), in %, as printed: integers, one number per cell "
            "(no interval, no std), the paper's data and its 7 training sizes (N = 62 ... 4k) and seeds; they "
            "compare with ours only where the data, sizes and checkpoint match. — : a cell the paper leaves empty.")


def legend(rule: dict, resamples: int, seed: int, smoke_rows: bool = False) -> str:
    """What every number, column and marker of the report means, and the medal rule with its thresholds
    (``smoke_rows``: also the smoke-scale marker)."""
    weights = ", ".join(f"{w:g}" for w in ws_weights(7))
    success, partial = (f"{100 * rule[k]:g}" for k in ("success", "partial"))
    smoke_line = f"\n- **{smoke.MARK}**: {smoke.LEGEND}." if smoke_rows else ""
    return f"""Accuracies on each probe's dev split, in percent.
- The learning curve is the mean over training seeds of the accuracy at each N (the paper: "report average
  accuracy across seeds"), and WS, MAX and the sensitivities are statistics of that seed-averaged curve.
  `value [low, high]`: the statistic and its 95% percentile bootstrap interval over dev examples ({resamples}
  resamples, seed {seed}): a resample draws the dev examples' facts with replacement once (the unit the data
  repeats: all rows of a fact, under every template, together, with their control rows), applies them to every
  (N, seed) point of the curve, averages the seeds and recomputes the whole statistic. The interval measures
  dev-example sampling, given the trained heads. `value ± std [low, high]` (WS only): also the standard deviation
  (ddof 1) over seeds of each seed's own WS, whose mean WS is (WS is linear): seed-to-seed variation; `± —` over
  one seed, where it is undefined. MAX and the
  sensitivities have no ± std: they are nonlinear in the seeds' curves, so no per-seed value averages to them.
  Zero-shot: accuracy and its interval.
- **Zero-shot**: the checkpoint's pretrained MLM head before any training; — where there is none (MC-QA starts
  from an untrained head). For a † row or a baseline it is an untrained head's accuracy: no knowledge.
- **WS**: Σ w_i · acc(N_i) with the paper's weights ({weights}) from smallest N to
  largest (the first k, renormalised, for a curve of k sizes); **MAX**: the best accuracy on the seed-averaged
  curve (the maximum over N of the mean over seeds, not the mean of each seed's maximum: that is biased upward
  by seed noise). {MAX_INTERVAL}
- **MLP** / **LINEAR**: MC-MLM, encoder frozen, the MLM head trained / only its last projection trained;
  **MC-QA**: the whole network fine-tuned with a new choice-scoring head.
- **pert** / **nolang**: language sensitivity to the PERTURBED-LANG / NO-LANG control on the main setting (MLP
  for MC-MLM, MC-QA for MC-QA): the WS formula over max(0, acc(original) − acc(control)) of the seed-averaged
  curves (seeds averaged before the max(0, ·)). Computed over
  the original examples that have a control row (matched through `source_id`, k-th occurrence to k-th); the
  interval resamples those examples' facts, each with its control row.
- **▲ / ▼**: significantly above / below the probe's baseline row in the same setting: paired bootstrap over the
  same dev examples (a drawn fact counts on both sides together), 95% interval of the difference excluding 0. The
  baseline row is the one with a `baseline` (MLM-BASELINE for MC-MLM, ESIM for MC-QA); with several, the one with
  the highest WS.
- **↑**: the zero-shot interval lies entirely above chance (pretrained heads only: never † rows or baselines).
- **⚠**: a constant predictor: the model gave one answer (the same word, or the same position) to every dev example
  of a variant at that point (zero-shot) or in some run (N, seed) of that curve (on a sensitivity: of the original
  or of the control); its accuracy is the share of examples whose gold is that answer, no knowledge. The note under
  the table names the runs and the answer.
- **⚑**: beside a ↑ or a medal: the model is no better on the original than on its PERTURBED-LANG control (the
  paired zero-shot difference, or the main PERTURBED sensitivity, has an interval reaching 0: it reads no template),
  or no better than its random-init row (`random:<model>`: its architecture and tokenizer with fresh weights; the
  paired zero-shot or main WS difference not above 0). The paper's medal rule stands; the note under the table
  says why the flag is there.
- **↓**: on a sensitivity: the control's own WS interval (on the same examples) lies entirely below chance, so
  max(0, acc(original) − acc(control)) counts the control's failure, not the model's use of language.
- **†**: {NO_HEAD}.{smoke_line}
- **↳ paper: X**: under a row whose checkpoint (Hub id) or baseline the paper evaluated, its published numbers
  (Talmor et al. 2020, Tables 2, 3, 5 and 7-11) for the paper's model X: integer %, no interval.
- **Paired differences**: A − B in percentage points over the n dev examples both rows were scored on, its 95%
  interval, and the two-sided bootstrap p = 2 × the smaller share of resampled differences ≤ 0 or ≥ 0 (resolution
  2/{resamples}).

**Medals** (rows: probes, columns: models), from the main WS (MLP WS for MC-MLM, MC-QA WS for MC-QA) against the
baseline row's, by the paired bootstrap above:
- **✓** (success): the model's WS exceeds the baseline's by at least {success} points with the paired interval
  above 0, and, for MC-MLM, its zero-shot interval lies above chance (↑);
- **✓–** (partial): otherwise, a WS margin of at least {partial} points with the paired interval above 0, or (MC-MLM)
  a zero-shot interval above chance;
- blank: neither; **n/a**: the probe has no baseline row to compare with; **—**: the model was not evaluated on the
  probe's main setting."""


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _interval(c: dict) -> str:
    return f"[{_pct(c['low'])}, {_pct(c['high'])}]"


def _marker(test: dict | None) -> str:
    if not test or not test["holds"]:
        return ""
    return " ▲" if test["diff"] > 0 else " ▼"


def _p(p: float, resamples: int) -> str:
    return f"< {2 / resamples:.3g}" if p == 0 else f"{p:.3f}"


def _stat(c: dict) -> str:
    """``value ± std [low, high]`` (WS; ``± —`` over one seed) or ``value [low, high]`` (MAX, sensitivity)."""
    std = f" ± {deviation(c.get('std'), c['seeds'], _pct)}" if "seeds" in c else ""
    return f"{_pct(c['value'])}{std} {_interval(c)}"


def _newly_initialised(probe: Probe, label: str) -> bool:
    return any(r.meta["lm_head"] == "newly_initialised" for r in probe.results[label].values())


def _smoke(probe: Probe, label: str) -> bool:
    return smoke.any_smoke(r.meta for r in probe.results[label].values())


def caps(probe: Probe) -> list[str]:
    """The caps of the data the probe's rows ran on (``capped`` in their metrics: the table sets a run read from
    a capped source under ``capped: accept``, :mod:`probekit.sources.capped`)."""
    return sorted({c for by_setting in probe.results.values() for r in by_setting.values()
                   for c in r.meta.get("capped") or ()})


def probe_table(probe: Probe) -> str:
    """The probe's main table: one row per model then baseline, the paper's Table 2 columns."""
    settings, main = probe.settings(), MAIN[probe.protocol]
    header = ["model", "Zero-shot", *(f"{s} {k}" for s in settings for k in ("WS", "MAX")), *CONTROLS.values()]
    rows = []
    for label in probe.rows:
        zero = probe.zero_shot(label)
        marks = (" †" if _newly_initialised(probe, label) else "") + (f" {smoke.MARK}" if _smoke(probe, label)
                                                                      else "")
        zero_setting = next((s for s in SETTINGS if "zero_shot" in probe.cells[label].get(s, {})), None)
        row = [label + marks,
               f"{_pct(zero['mean'])} {_interval(zero)}{' ↑' if zero['above_chance'] else ''}"
               f"{degenerate_mark(probe, label, '↑')}"
               f"{constant_mark(probe, label, zero_setting, zero_shot=True)}" if zero else "—"]
        for setting in settings:
            for key in ("WS", "MAX"):
                c = probe.cells[label].get(setting, {}).get(key)
                row.append(f"{_stat(c)}{_marker(probe.vs_baseline.get((label, setting, key)))}"
                           f"{constant_mark(probe, label, setting)}" if c else "—")
        for name in CONTROLS:
            c = probe.cells[label].get(main, {}).get(name)
            row.append(f"{_stat(c)}{' ↓' if c['below_chance'] else ''}"
                       f"{constant_mark(probe, label, main, ('original', name))}" if c else "—")
        rows.append(row)
        paper = published_row(probe, label)
        if paper:
            rows.append([f"↳ paper: {paper['row']}", *(_paper_cell(paper["values"][h]) if h in paper["values"]
                                                       else "" for h in header[1:])])
    return tabulate(rows, header, tablefmt="github", disable_numparse=True)


def pairs_table(probe: Probe, resamples: int) -> str:
    """Pairwise differences of the main WS, A − B, with interval and p."""
    key = f"Δ {MAIN[probe.protocol]} WS"
    rows = [[a, b, t["n"], f"{100 * t['diff']:+.1f}", _interval(t), _p(t["p_value"], resamples),
             "yes" if t["holds"] else "no"] if t else [a, b, 0, "—", "—", "—", "no common examples"]
            for a, b, t in probe.pairs]
    return tabulate(rows, ["A", "B", "n", key, "95% CI", "p", "interval excludes 0"], tablefmt="github",
                    disable_numparse=True)


def medal_table(probes: list[Probe]) -> str:
    """Rows: probes; columns: models (baselines excluded); cells by the documented rule."""
    models = sorted({label for p in probes for label in p.rows if not p.is_baseline(label)})
    rows = [[p.title, *(p.medals.get(m, "—") + (degenerate_mark(p, m, "medal") if m in p.medals else "")
                        for m in models)] for p in probes]
    return tabulate(rows, ["probe", *models], tablefmt="github", disable_numparse=True)


def _curve_lines(probe: Probe) -> list[str]:
    """n, chance, sizes and seeds of the probe's curves (one line per distinct combination), and a warning when
    its rows were evaluated on different data."""
    combos: dict = {}
    for label in probe.rows:
        for setting, r in sorted(probe.results[label].items(), key=lambda item: SETTINGS.index(item[0])):
            m = r.meta
            key = (m["n"], m["chance"], tuple(m["sizes"]), tuple(m["seeds"]), tuple(m.get("sizes_dropped") or ()))
            combos.setdefault(key, []).append(f"{label} {setting}")
    lines = []
    for (n, chance, sizes, seeds, dropped), where in combos.items():
        line = (f"n = {n} dev examples, chance {_pct(chance)}%, N = {', '.join(map(str, sizes))}; "
                f"seeds {', '.join(map(str, seeds))}")
        line += f"; sizes dropped: {', '.join(map(str, dropped))}" if dropped else ""
        lines.append(line + (f" ({', '.join(where)})" if len(combos) > 1 else ""))
    fingerprints = {r.meta.get("data_fingerprint") for by_setting in probe.results.values()
                    for r in by_setting.values()}
    if len(fingerprints) > 1:
        lines.append(f"**⚠ the rows were evaluated on different data ({len(fingerprints)} data_fingerprints): "
                     "compare them with care.**")
    return lines


def lr_lines(probes: list[Probe]) -> list[str]:
    """The section on each model's MC-MLM heads' lr and how it was chosen (its curves' ``lr_selection``); a model
    whose curves were trained with different ones gets a line per lr, naming its curves."""
    chosen: dict[str, dict[str, list[str]]] = {}
    for probe in probes:
        for label in probe.rows:
            for setting, r in probe.results[label].items():
                if r.meta.get("lr_selection"):
                    where = chosen.setdefault(label, {}).setdefault(describe_lr(r.meta["lr_selection"]), [])
                    where.append(f"{probe.title} {setting}")
    lines = []
    for label, texts in sorted(chosen.items()):
        for text, where in texts.items():
            lines.append(f"- {label}: {text}" if len(texts) == 1 else f"- {label} ({', '.join(where)}): {text}")
    return ["## The MC-MLM heads' learning rate", "", "The original's is not known (`transformer_masked_lm.jsonnet`: "
            "`#local learning_rate = 5e-5; local learning_rate = 0.0;`, set per run):", "", *lines, ""] if lines else []


RELEASE_LINES = {"release": ["- data: the original release's own train and dev files (params curve.release), as the "
                             "original's curves (its configs' train_data_path); no NO-LANG or PERTURBED control"]}
"""The line a probe section on the release's files adds (:mod:`evaluators.olmpics.release_curves`)."""


def markdown(probes: list[Probe], *, rule: dict, resamples: int, seed: int) -> str:
    """The whole report: legend, medal table, then per probe its table, footnote and paired differences."""
    small = any(_smoke(p, label) for p in probes for label in p.rows)
    lines = smoke.with_banner(["# oLMpics learning curves (dev), with 95% bootstrap intervals", "",
                               legend(rule, resamples, seed, small), "", "## Medals", "", medal_table(probes), "",
                               *lr_lines(probes)], small)
    for probe in probes:
        capped = caps(probe)
        lines += [f"## {probe.title}" + (f" {CAPPED_MARK}" if capped else ""), "", f"- protocol: {probe.protocol}",
                  *RELEASE_LINES.get(probe.data, []),
                  *(f"- {line}" for line in _curve_lines(probe)), "", probe_table(probe), ""]
        if capped:
            lines += [f"{CAPPED_MARK} **ran on capped data** (accepted: `capped: accept`): {'; '.join(capped)}. "
                      "Not the paper's sizes: its N and WS are not the paper's either.", ""]
        marked = [label for label in probe.rows if _newly_initialised(probe, label)]
        if marked:
            lines += [f"† {', '.join(marked)}: {NO_HEAD}.", ""]
        lines += flag_lines(probe)
        smoky = [label for label in probe.rows if _smoke(probe, label)]
        if smoky:
            lines += [f"{smoke.MARK} {', '.join(smoky)}: {smoke.LEGEND}.", ""]
        papers = {p["table"]: p["title"] for label in probe.rows if (p := published_row(probe, label))}
        if papers:
            lines += [f"↳ paper: {_published_source(papers)}", ""]
        if probe.pairs:
            lines += [f"Paired differences in {MAIN[probe.protocol]} WS (A − B, points):", "",
                      pairs_table(probe, resamples), ""]
    return "\n".join(lines)


def summary(probes: list[Probe]) -> dict:
    """``{probe: {row: {setting: {WS, WS_std, WS_low, WS_high, MAX, MAX_low, MAX_high, MAX_at_n, nolang,
    nolang_low, ..., nolang_control_WS[_low, _high], nolang_control_MAX[_low, _high], nolang_below_chance, ..., n,
    chance, constant_predictor}, zero_shot, medal, profile, baseline, published_pct}}}``: each statistic of the
    seed-averaged curve, its interval, the seeds' std for WS only (none over one seed), the N of MAX, each control's
    own WS and MAX with their intervals and whether its WS interval is below chance, the dev examples and chance,
    and, where a variant had one, its constant points (``{variant: {zero_shot, runs: [[N, seed, answer]], of}}``,
    :func:`evaluators.olmpics.constant.runs`) (``profile``: the params profile of the row's runs,
    :func:`smoke.profile_of`; ``baseline``: a baseline row; ``published_pct``: the paper's row,
    :func:`published_row`, where it has one)."""
    out: dict = {}
    for probe in probes:
        for label in probe.rows:
            entry: dict = {}
            zero = probe.zero_shot(label)
            if zero:
                entry["zero_shot"] = {"accuracy": round(zero["mean"], 4), "low": round(zero["low"], 4),
                                      "high": round(zero["high"], 4)}
            for setting, cells in probe.cells[label].items():
                entry[setting] = {f"{key}{suffix}": c[stat] if stat == "at_n" else round(c[stat], 4)
                                  for key, c in cells.items() if key != "zero_shot"
                                  for suffix, stat in (("", "value"), ("_std", "std"), ("_low", "low"),
                                                       ("_high", "high"), ("_at_n", "at_n"))
                                  if c.get(stat) is not None}
                result = probe.results[label][setting]
                entry[setting].update(n=result.meta["n"], chance=round(result.meta["chance"], 4))
                for name in CONTROLS:
                    if name in cells:
                        entry[setting].update(
                            {f"{name}_control_{key}{suffix}": round(cells[name][f"control_{key}"][stat], 4)
                             for key in ("WS", "MAX") for suffix, stat in (("", "estimate"), ("_low", "low"),
                                                                           ("_high", "high"))})
                        entry[setting][f"{name}_below_chance"] = cells[name]["below_chance"]
                found = {v: f for v, f in result.constant.items() if f["zero_shot"] or f["runs"]}
                if found:
                    entry[setting]["constant_predictor"] = found
            if label in probe.medals:
                entry["medal"] = MEDAL_WORDS[probe.medals[label]]
            flags = degenerate(probe, label)
            if flags:
                entry["flags"] = [{"on": on, "why": why} for on, why in flags]
            if label in (probe.random_rows or {}):
                entry["random_init_row"] = probe.random_rows[label]
            entry["profile"] = smoke.profile_of(r.meta for r in probe.results[label].values())
            if caps(probe):
                entry["capped"] = caps(probe)
            entry["baseline"] = probe.is_baseline(label)
            paper = published_row(probe, label)
            if paper:
                entry["published_pct"] = paper
            out.setdefault(probe.title, {})[label] = entry
    return out


def write_olmpics_report(folders: list[Path], *, out_md: Path, out_json: Path | None = None,
                         plots: Path | None = None, resamples: int = 1000, seed: int = 0,
                         medals: dict | None = None) -> list[Path]:
    """Write the markdown report and, when given, the ``dvc metrics`` JSON and the plots folder (a PNG and a
    ``dvc plots`` JSON per probe); returns the paths written."""
    skipped: list[dict] = []
    found = list(iter_metrics(folders, skipped))
    if not found and not skipped:
        raise DataError(f"no metrics.json under {', '.join(map(str, folders))}")
    return write_results(found, out_md=out_md, out_json=out_json, plots=plots, resamples=resamples, seed=seed,
                         medals=medals, skipped=skipped)


def write_results(found: list[tuple[Path, dict]], *, out_md: Path, out_json: Path | None = None,
                  plots: Path | None = None, resamples: int = 1000, seed: int = 0,
                  medals: dict | None = None, skipped: list[dict] = ()) -> list[Path]:
    """:func:`write_olmpics_report` of ``(path, metrics)`` pairs (a curve or MC-QA metrics.json each); ``skipped``:
    the runs that skipped their model (:mod:`evaluators.shared.applies`), listed at the end."""
    rule = medal_rule(medals)
    probes = analyse([load(path, meta) for path, meta in found], resamples=resamples, seed=seed, medals=rule)
    text = markdown(probes, rule=rule, resamples=resamples, seed=seed) if found else \
        "# oLMpics learning curves (dev)\n\nNo results.\n"
    atomic.write_text(out_md, applies.with_skipped(text, skipped))
    written = [Path(out_md)]
    if out_json:
        atomic.write_json(out_json, summary(probes))
        written.append(Path(out_json))
    if plots:
        written += olmpics_plots.write_plots(probes, Path(plots))
    return written
