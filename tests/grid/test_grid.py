"""Evaluation grids (``probes grid``, local executor): expansion, keys, the store, caching, a failing cell."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
import yaml

from evaluators.grid import executors
from evaluators.grid import plan as grid
from evaluators.grid import store as grid_store
from probekit.errors import DataError
from probekit.params import ParamsFile
from probes.main import main


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """A small generated age_comparison probe (original and nolang)."""
    root = tmp_path_factory.mktemp("grid-data")
    params = root / "params.yaml"
    params.write_text(yaml.safe_dump({"age_comparison": {"size": {"train": 8, "dev": 6},
                                                         "variants": ["original", "nolang"]}}))
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(root / "age")]) == 0
    return root / "age"


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (2 CPUs) for this module's Ray tests, started once (seconds) and stopped after them;
    RAY_ADDRESS=local (tests/conftest.py): never a cluster of the caller's."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


def _spec(tmp_path, **body) -> str:
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return str(path)


def test_a_spec_expands_to_the_cross_product_of_its_lists(tmp_path):
    spec = grid.read_spec(_spec(tmp_path, protocol="calum", models=["a", "b"], data="d", seeds=[1, 2, 3],
                                limit=10, a_an_filter=False))
    cells = grid.expand(spec)
    assert len(cells) == 6 and [c.model for c in cells[:3]] == ["a"] * 3
    assert [dict(c.options)["seeds"] for c in cells[:3]] == [1, 2, 3]
    assert cells[0].argv(tmp_path / "o", "p.yaml") == ["evaluate", "calum", "--model", "a", "--data", "d", "--out",
                                                      str(tmp_path / "o"), "--seeds", "1", "--limit", "10",
                                                      "--no-a-an-filter", "--params", "p.yaml"]
    with pytest.raises(DataError, match=r"grid.yaml: protocol: Input should be"):
        grid.read_spec(_spec(tmp_path, protocol="bogus", models="a", data="d"))
    with pytest.raises(DataError, match=r"grid.yaml: sizes: an option is a scalar or a list of scalars"):
        grid.read_spec(_spec(tmp_path, protocol="curve", models="a", data="d", sizes=[[1, 2]]))


def test_cells_run_once_a_failure_is_reported_and_the_fix_runs_only_it(tmp_path, probe, tiny_bert, capsys):
    bad = tmp_path / "not-yet"
    spec = _spec(tmp_path, protocol="zeroshot", models=[str(tiny_bert), str(bad)], data=[str(probe)], limit=[3, 6])
    store = tmp_path / "store"
    assert main(["grid", "--spec", spec, "--out", str(store)]) == 1
    out = capsys.readouterr().out
    assert "4 cells: 2 run, 0 cached, 2 failed" in out and f"no model folder {bad}" in out
    stored = sorted(p.name for p in (store / "cells").iterdir())
    assert len(stored) == 2 and not list((store / "cells").glob(".*"))   # no partial cell left behind
    cell = json.loads((store / "cells" / stored[0] / "cell.json").read_text())
    metrics = json.loads((store / "cells" / stored[0] / "result/original/metrics.json").read_text())
    assert cell["key"] == stored[0] and metrics["n"] == cell["options"]["limit"]

    # Each cell run directly gives the same metrics.json, byte for byte (the second cell scored with the model
    # the first one loaded, kept between cells).
    for key in stored:
        limit = json.loads((store / "cells" / key / "cell.json").read_text())["options"]["limit"]
        direct = tmp_path / f"direct-{limit}"
        assert main(["evaluate", "zeroshot", "--model", str(tiny_bert), "--data", str(probe), "--out", str(direct),
                     "--limit", str(limit)]) == 0
        for variant in ("original", "nolang"):
            assert (direct / variant / "metrics.json").read_bytes() == \
                (store / "cells" / key / "result" / variant / "metrics.json").read_bytes()

    capsys.readouterr()
    assert main(["grid", "--spec", spec, "--out", str(store), "--dry-run"]) == 0
    assert "4 cells: 2 cached, 2 to run" in capsys.readouterr().out
    shutil.copytree(tiny_bert, bad)   # the fix: the model now exists
    assert main(["grid", "--spec", spec, "--out", str(store)]) == 0
    assert "4 cells: 2 run, 2 cached, 0 failed" in capsys.readouterr().out
    summary = [json.loads(line) for line in (store / "summary.jsonl").read_text().splitlines()]
    assert [r["status"] for r in summary] == ["stored"] * 4
    assert "| original | stored |" in (store / "summary.md").read_text()
    # the report: the zero-shot report's table, a row per model, limit, probe and variant
    report = re.sub(" +", " ", (store / "report.md").read_text())   # the table's padding aside
    assert "## Paired differences" in report
    for model in (tiny_bert, bad):
        for limit in (3, 6):
            assert f"| {model} · limit={limit} | age_comparison | nolang |" in report
    key = next(r["key"] for r in summary if r["model"] == str(tiny_bert) and r["options"]["limit"] == 6)
    m = json.loads((store / "cells" / key / "result/original/metrics.json").read_text())
    assert f"| {tiny_bert} · limit=6 | age_comparison | original | {m['accuracy']:.3f} [" in report
    assert json.loads((store / "report.json").read_text())[f"{tiny_bert} · limit=6"]["age_comparison"]["original"][
        "accuracy"] == round(m["accuracy"], 4)
    assert (store / "report.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["grid", "--spec", spec, "--out", str(store)]) == 0
    assert "4 cells: 0 run, 4 cached, 0 failed" in capsys.readouterr().out
    (store / "cells" / "0123stale").mkdir()
    assert main(["grid", "--spec", spec, "--out", str(store), "--prune"]) == 0
    assert "pruned 1 stored cell(s)" in capsys.readouterr().out and len(list((store / "cells").iterdir())) == 4


def test_report_rows_name_what_varies_and_what_the_report_would_not_tell_apart():
    def plans(protocol, cells):
        return [grid.Planned(f"k{i}", grid.Cell(protocol, m, d, tuple(o.items())), False)
                for i, (m, d, o) in enumerate(cells)]

    from evaluators.grid.report import suffixes

    zs = plans("zeroshot", [("a", "p/age", {"limit": 3, "dtype": "float32"}), ("a", "p/age", {"limit": 6,
                            "dtype": "float32"}), ("b", "p/never", {"limit": 3, "dtype": "float32"})])
    assert list(suffixes(zs).values()) == [" · limit=3", " · limit=6", " · limit=3"]
    assert list(suffixes(zs[:1]).values()) == [""]
    same_name = plans("zeroshot", [("a", "p/age", {}), ("a", "q/age", {})])   # one probe twice: the path shows
    assert list(suffixes(same_name).values()) == [" · data=p/age", " · data=q/age"]
    pararel = plans("pararel", [("a", "x/pararel", {}), ("a", "x/small", {})])   # its report names no data
    assert list(suffixes(pararel).values()) == [" · data=pararel", " · data=small"]
    calum = plans("calum", [("a", "d", {"task": "rte", "seeds": 1}), ("a", "d", {"task": "mrpc", "seeds": 2})])
    assert list(suffixes(calum).values()) == [" · seeds=1", " · seeds=2"]   # the task is the report's column


def test_cells_sharing_a_model_load_it_once(tmp_path, probe, tiny_bert, monkeypatch):
    from evaluators.engine import kept_models

    loads = []
    real = kept_models.load_lm
    monkeypatch.setattr(kept_models, "load_lm", lambda ref, **kw: loads.append(ref.name) or real(ref, **kw))
    copy = tmp_path / "copy"
    shutil.copytree(tiny_bert, copy)
    spec = _spec(tmp_path, protocol="zeroshot", models=[str(tiny_bert), str(copy)], data=[str(probe)],
                 limit=[2, 3, 4])
    assert main(["grid", "--spec", spec, "--out", str(tmp_path / "store")]) == 0
    assert loads == [str(tiny_bert), str(copy)]   # six cells, each model loaded once
    assert kept_models._size == 0 and not kept_models._kept   # freed after the grid

    # outside a grid every run loads its model; with keeping on, rewritten weights are another model
    ref = kept_models.ModelRef(str(copy), str(copy), str(copy))
    assert kept_models.scoring_lm(ref, scoring="mlm") is not kept_models.scoring_lm(ref, scoring="mlm")
    with kept_models.keeping(1):
        first = kept_models.scoring_lm(ref, scoring="mlm")
        assert kept_models.scoring_lm(ref, scoring="mlm") is first
        assert kept_models.scoring_lm(ref, scoring="mlm", seed=1) is not first   # other options: another load
        (copy / "config.json").write_text((copy / "config.json").read_text() + "\n")
        assert kept_models.scoring_lm(ref, scoring="mlm") is not first


def test_keys_follow_the_data_the_params_and_the_options(tmp_path, probe, tiny_bert):
    data = tmp_path / "probe"
    shutil.copytree(probe, data)
    spec = grid.read_spec(_spec(tmp_path, protocol="zeroshot", models=str(tiny_bert), data=str(data), limit=[3, 4]))
    none = ParamsFile(None)
    first = [p.key for p in grid.plan(spec, tmp_path, none)]
    assert len(set(first)) == 2 and first == [p.key for p in grid.plan(spec, tmp_path, none)]
    # the params the protocol reads are part of the key; another protocol's section is not
    assert first == [p.key for p in grid.plan(spec, tmp_path, ParamsFile(None, {"calum_eval": {"seeds": [1]}}))]
    assert first == [p.key for p in grid.plan(spec, tmp_path, ParamsFile(None, {"scoring": {"batch_size": 3}}))]
    rules = ParamsFile(None, {"scoring": {"rules": {"mlm": "pll"}}})
    assert not set(first) & {p.key for p in grid.plan(spec, tmp_path, rules)}
    meta = data / "original/meta.json"
    meta.write_text(meta.read_text().replace('"fingerprint": "', '"fingerprint": "0'))   # other rows written
    assert not set(first) & {p.key for p in grid.plan(spec, tmp_path, none)}


@pytest.mark.slow   # a Ray cluster (local_ray)
def test_the_ray_executor_stores_the_same_bytes_and_reports_failures(tmp_path, probe, tiny_bert, capsys,
                                                                     monkeypatch, local_ray):
    bad = tmp_path / "missing-model"
    spec = _spec(tmp_path, protocol="zeroshot", models=[str(tiny_bert), str(bad)], data=[probe.name], limit=[3, 6])
    monkeypatch.chdir(probe.parent)   # the data's path is relative to this directory, not the workers' own
    assert main(["grid", "--spec", spec, "--out", str(tmp_path / "ray"), "--executor", "ray"]) == 1
    out = capsys.readouterr().out
    assert "4 cells: 2 run, 0 cached, 2 failed" in out and f"no model folder {bad}" in out
    assert main(["grid", "--spec", spec, "--out", str(tmp_path / "local")]) == 1
    stored = sorted(p.name for p in (tmp_path / "ray" / "cells").iterdir())
    assert stored == sorted(p.name for p in (tmp_path / "local" / "cells").iterdir()) and len(stored) == 2
    for key in stored:
        ray_out, local_out = tmp_path / "ray/cells" / key / "result", tmp_path / "local/cells" / key / "result"
        for name in ("original/metrics.json", "nolang/metrics.json"):
            assert (ray_out / name).read_bytes() == (local_out / name).read_bytes()
        # scores agree to float noise: a Ray task runs on 1 thread (its num_cpus), the local run on all cores
        ray_rows, local_rows = ([json.loads(line) for line in (out / "original/predictions.jsonl").read_text()
                                 .splitlines()] for out in (ray_out, local_out))
        assert [r["prediction"] for r in ray_rows] == [r["prediction"] for r in local_rows]
        assert all(a == pytest.approx(b, rel=1e-5, abs=1e-6) for x, y in zip(ray_rows, local_rows)
                   for a, b in zip(x["scores"], y["scores"]))


@pytest.mark.slow   # a Ray cluster (local_ray)
def test_a_killed_ray_worker_loses_no_cell_and_the_retry_completes_its_cell(tmp_path, probe, tiny_bert, local_ray):
    import psutil

    spec = grid.read_spec(_spec(tmp_path, protocol="zeroshot", models=str(tiny_bert), data=str(probe),
                                limit=[2, 3, 4, 5]))
    store, params = tmp_path / "store", ParamsFile(None)
    plans, outcome, killed = grid.plan(spec, store, params), {}, []
    run = threading.Thread(target=lambda: outcome.update(failures=executors.run_ray(plans, store, None, main, progress=False)))
    run.start()
    deadline = time.monotonic() + 120
    while not killed and run.is_alive() and time.monotonic() < deadline:
        # a cell's temporary folder exists: a worker is inside run_cell; kill a worker running a cell (a worker
        # of this test's Ray: a process under this one, never another program's)
        if list((store / "cells").glob(".*")) if (store / "cells").is_dir() else []:
            for proc in psutil.Process().children(recursive=True):
                try:
                    if " ".join(proc.cmdline()).startswith("ray::_ray_cell"):
                        proc.kill()
                        killed.append(proc.pid)
                        break
                except psutil.NoSuchProcess:
                    pass
        time.sleep(0.01)
    run.join(timeout=300)
    assert killed, "no worker was caught running a cell"
    assert outcome["failures"] == []   # the killed cell was retried and finished
    cells = store / "cells"
    assert sorted(p.name for p in cells.iterdir()) == sorted(p.key for p in plans)   # every cell, no partial one
    assert not list(store.rglob(".*.tmp"))
    assert executors.run_local(grid.plan(spec, tmp_path / "local", params), tmp_path / "local", None, main,
                               progress=False) == []
    for p in plans:
        for variant in ("original", "nolang"):
            name = f"{p.key}/result/{variant}/metrics.json"
            assert (cells / name).read_bytes() == (tmp_path / "local/cells" / name).read_bytes()


def test_a_cell_is_stored_once_the_first_attempt_to_finish_wins(tmp_path):
    planned = grid.Planned("k1", grid.Cell("zeroshot", "m", "d", ()), False)
    target = tmp_path / "cells" / "k1"

    def evaluate(argv):   # another attempt stores the cell while this one runs
        out = argv[argv.index("--out") + 1]
        Path(out).mkdir(parents=True)
        (Path(out) / "metrics.json").write_text('{"second": true}')
        (target / "result").mkdir(parents=True)
        (target / "cell.json").write_text('{"first": true}')
        return 0

    assert grid_store.run_cell(planned, tmp_path, None, evaluate) is None
    assert (target / "cell.json").read_text() == '{"first": true}' and not (target / "result/metrics.json").exists()
    assert sorted(p.name for p in (tmp_path / "cells").iterdir()) == ["k1"]   # the later attempt's folder removed


def test_a_crash_is_raised_for_a_retry_and_an_input_error_is_not(tmp_path):
    planned = grid.Planned("k1", grid.Cell("zeroshot", "m", "d", ()), False)

    def crash(argv):
        assert argv[0] == "--debug"   # so errors arrive typed
        raise RuntimeError("CUDA out of\nmemory")

    assert grid_store.run_cell(planned, tmp_path, None, crash).error == "RuntimeError: CUDA out of memory"
    with pytest.raises(RuntimeError):   # under Ray: raised, so the task is retried
        grid_store.run_cell(planned, tmp_path, None, crash, raise_crash=True)
    input_error = lambda argv: (_ for _ in ()).throw(DataError("d: no such probe"))  # noqa: E731
    failure = grid_store.run_cell(planned, tmp_path, None, input_error, raise_crash=True)   # same every attempt: reported
    assert failure.error == "probes evaluate zeroshot: error: d: no such probe"
    assert list((tmp_path / "cells").iterdir()) == []


def test_what_a_killed_attempt_left_goes_even_when_its_cell_was_stored_by_another(tmp_path):
    """A killed worker's temporary folder whose cell another attempt has since stored: no later run writes that
    cell again, so the run's sweep of the store removes it; a user's hidden folder in cells/ stays."""
    import subprocess
    import sys

    from probekit.outputs import atomic

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    cells = tmp_path / "store" / "cells"
    planned = grid.Planned("k1", grid.Cell("zeroshot", "m", "d", ()), True)   # stored: nothing to run
    left = cells / f".k1.{proc.pid}-{atomic._HOST}.abc.tmp"
    (left / "k1").mkdir(parents=True)
    (left / atomic._NOTE).write_text(json.dumps({"written_by": "probekit", "temporary_of": "k1", "pid": proc.pid,
                                                 "host": atomic._HOST}) + "\n")
    (cells / ".mine" / "notes.txt").parent.mkdir()
    (cells / ".mine" / "notes.txt").write_text("mine\n")
    assert executors.run_local([planned], tmp_path / "store", None, progress=False) == []
    assert sorted(p.name for p in cells.iterdir()) == [".mine"]
