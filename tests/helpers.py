"""What tests share besides fixtures (those are in the ``conftest.py`` files): the repository and the source
mirror, tiny-model builders, a loopback HTTP server, small dataset writers, a fake Hub for ``datasets``, the DVC
environment of a test's ``dvc``. Imported by ``tests/conftest.py`` before it clears the environment (``MIRROR`` reads
``PROBES_TEST_MIRROR`` then)."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


# The source mirror the fixtures copy from (every file sha256-checked against raw/sources.yaml): the workspace's
# ../shared/raw, or PROBES_TEST_MIRROR. Not $PROBES_MIRROR: that one is the code under test's, and cleared below.
MIRROR = Path(os.environ.get("PROBES_TEST_MIRROR") or REPO.parent / "shared" / "raw").resolve()


DVC_KEYS = ("DVC_NO_ANALYTICS", "DVC_GLOBAL_CONFIG_DIR", "DVC_SYSTEM_CONFIG_DIR", "DVC_SITE_CACHE_DIR")
"""Set by ``tests/conftest.py`` for the whole session (``DVC_ENV``)."""


def dvc_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the variables every ``dvc`` command of a test needs."""
    return {**(os.environ if base is None else base), **{k: os.environ[k] for k in DVC_KEYS}}


# Text the tiny BPE is trained on: probe phrasings, so that answer words are whole tokens both with and
# without the byte-level space marker ("older" at the start of a line, "Ġolder" after a space).
_CORPUS = [
    "A 24 year old person is older than me in age, If I am a 55 year old person.",
    "A 31 year old person is younger than me in age, If I am a 19 year old person.",
    "When comparing a 23 year old, a 38 year old and a 31 year old, the first is oldest .",
    "the second is oldest . the third is oldest .",
    "older younger first second third blah ya foo",
    "older than younger than first second third",
] * 200


def _tiny_bert_config(vocab_size: int, **extra):
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=128, **extra)


def save_tiny_bert(path: Path, vocab: Path, model_class, **config) -> Path:
    import torch
    from transformers import BertTokenizerFast

    tokenizer = BertTokenizerFast(str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    model_class(_tiny_bert_config(tokenizer.vocab_size, **config)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


class MirrorSources:
    """Sources fetched from the mirror into one raw root, as ``probes sources fetch`` stores them (the real
    manifest), and loaders run on them with the built-in params, as ``probes tables NAME``: each once per
    session (with ``shared``, a folder every worker of the session sees: once for all workers). Tests read what
    they get and never change it."""

    def __init__(self, raw: Path, shared: Path | None = None):
        self.raw = raw
        self.shared = shared
        self._fetched: set[str] = set()
        self._loaded: dict = {}

    @staticmethod
    def params(name: str):
        """Loader ``name``'s built-in params (``tables.NAME`` of no params file)."""
        from probekit.params import ParamsFile, section
        from probekit.sources import loaders

        return section(ParamsFile(None), f"tables.{name}", loaders.get(name).params)

    def fetch(self, name: str) -> Path:
        """The raw root, now holding the sources of loader ``name``."""
        if name not in self._fetched:
            from probekit.sources import loaders
            from probekit.sources.fetch import fetch
            from probekit.sources.manifest import load_manifest

            assert MIRROR.is_dir(), f"no source mirror at {MIRROR}: put it at ../shared/raw or set PROBES_TEST_MIRROR"
            manifest = load_manifest(REPO / "raw/sources.yaml")
            for source in loaders.get(name).sources(self.params(name)):
                fetch(manifest[source], self.raw / source, mirror=MIRROR, progress=False)
            self._fetched.add(name)
        return self.raw

    def loaded(self, name: str):
        """Loader ``name``'s ``Loaded`` (tables and report) on the mirror's sources."""
        if name not in self._loaded:
            self._loaded[name] = self._load(name) if self.shared is None else self._load_shared(name)
        return self._loaded[name]

    def _load(self, name: str):
        from probekit.sources import loaders

        return loaders.get(name).fn(self.fetch(name), self.params(name))

    def _load_shared(self, name: str):
        """:meth:`_load` by the first worker that asks, pickled in ``shared``; the others read the pickle."""
        import pickle

        from filelock import FileLock

        self.shared.mkdir(parents=True, exist_ok=True)
        path = self.shared / f"{name}.pickle"
        with FileLock(f"{path}.lock"):
            if path.is_file():
                return pickle.loads(path.read_bytes())
            loaded = self._load(name)
            path.write_bytes(pickle.dumps(loaded))
            return loaded


class LoopbackServer:
    """An HTTP server on 127.0.0.1 in a thread; a subclass answers each request of ``methods`` in
    ``respond(request)`` with ``(status, body, headers)`` (no body sent for HEAD). ``close()`` stops it."""

    methods: tuple[str, ...] = ("GET",)
    protocol = "HTTP/1.0"

    def __init__(self, path: str = ""):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = outer.protocol

            def serve(self):
                code, body, headers = outer.respond(self)
                self.send_response(code)
                for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def log_message(self, *args):
                pass

        for method in self.methods:
            setattr(Handler, f"do_{method}", Handler.serve)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def write_toy_cloze_set(folder: Path, relations: dict, meta: dict | None = None, card: str = "card\n") -> Path:
    """A ParaRel cloze set of N-1 ``relations`` (``{relation: (patterns, [(subject, object), ...])}``, every pattern
    pair an edge) written as ``probes generate pararel`` writes it, with ``meta`` (default ``{"params": {}}``) and
    ``card`` as its README; its folder."""
    from itertools import permutations

    from probekit.data.cloze import write_cloze_set

    rows = {"relations": [], "patterns": [], "tuples": [], "edges": []}
    for rel, (patterns, pairs) in relations.items():
        rows["relations"].append({"relation": rel, "class": "N-1", "candidates": sorted({o for _, o in pairs})})
        rows["patterns"] += [{"relation": rel, "pattern_id": i, "pattern": p, "first": i == 0}
                             for i, p in enumerate(patterns)]
        rows["tuples"] += [{"relation": rel, "tuple_id": f"{rel}-{k}", "subject": s, "object": o}
                           for k, (s, o) in enumerate(pairs)]
        rows["edges"] += [{"relation": rel, "source": a, "target": b, "syntactic_change": True,
                           "lexical_change": True, "determiner_change": False}
                          for a, b in permutations(range(len(patterns)), 2)]
    return write_cloze_set(folder, rows, {"params": {}} if meta is None else meta, lambda m: card)


def hub_from_folder(monkeypatch, root: Path, cache: Path) -> list:
    """``datasets.load_dataset(path, name, revision)`` patched to read ``root/<name>/<split>-*.parquet`` (a Hub
    dataset's layout, written by the test), cached in ``cache``; the calls it gets, appended to the list returned."""
    import datasets

    real_load, calls = datasets.load_dataset, []

    def load_dataset(path, name, revision=None):
        calls.append((path, name, revision))
        files = {p.name.split("-")[0]: str(p) for p in sorted((root / name).glob("*.parquet"))}
        return real_load("parquet", data_files=files, cache_dir=str(cache))

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def build_section(probe: str, section: dict, tables: dict | None = None, label: str = "t.yaml"):
    """``build_probe`` of ``probe`` with ``section`` as its params section (in a params file named ``label``)."""
    from generators.shared.build import build_probe
    from probekit.params import ParamsFile

    return build_probe(probe, ParamsFile(Path(label), {probe: section}), tables=tables)


def fake_result(root: Path, data_root: Path, model: str, variant: str, zero_shot: bool, pairs, predict,
                 chance: float = 0.5) -> float:
    """A zero-shot result of ``model`` on an age-comparison ``variant`` of ``pairs`` as ``probes evaluate zeroshot``
    writes it (``predict(a, b)`` -> label), with its dev file under ``data_root``; its accuracy."""
    from probekit.outputs.atomic import write_json, write_jsonl

    data = data_root / variant / "dev.jsonl"
    rows, predictions = [], []
    for n, (a, b) in enumerate(pairs):
        choices = [{"label": "A", "text": "younger"}, {"label": "B", "text": "older"}]
        rows.append({"id": f"{variant}{n}", "question": {"stem": "…", "choices": choices},
                     "answerKey": "A" if a < b else "B", "args": {"age1": a, "age2": b}})
        label = predict(a, b)
        predictions.append({"id": f"{variant}{n}", "scores": [0.0, 0.0], "prediction": label,
                            "gold": rows[-1]["answerKey"], "correct": label == rows[-1]["answerKey"]})
    write_jsonl(data, rows)
    out = root / model / "age_comparison" / variant
    write_jsonl(out / "predictions.jsonl", predictions)
    accuracy = sum(p["correct"] for p in predictions) / len(predictions)
    write_json(out / "metrics.json", {"model": model, "probe": "age_comparison", "variant": variant, "n": len(rows),
                                      "accuracy": accuracy, "chance": chance, "zero_shot": zero_shot,
                                      "data": str(data.resolve())})
    return accuracy


PAIRS = [(a, b) for a in range(15, 20) for b in range(15, 20) if a != b]

ANIMALS = ["dog", "cat", "horse", "cow", "bird", "fish", "sheep", "pig", "mouse", "lion"]
COLOURS = ["red", "blue", "green", "yellow", "black", "white", "brown", "pink", "orange", "gray"]


def toy_rows(n: int, seed: int, split: str) -> list[dict]:
    """A learnable MC-MLM probe: the answer is `yes` for an animal, `no` for a colour (choice order shuffled)."""
    import random

    rng = random.Random(seed)
    rows = []
    for i in range(n):
        word = rng.choice(ANIMALS + COLOURS)
        words = ["yes", "no"] if rng.random() < 0.5 else ["no", "yes"]
        gold = "yes" if word in ANIMALS else "no"
        rows.append({"id": f"{split}{i:04d}", "question": {"stem": f"the {word} is [MASK] .", "choices": [
            {"label": "AB"[k], "text": w} for k, w in enumerate(words)]}, "answerKey": "AB"[words.index(gold)],
            "args": {"word": word}})
    return rows


def toy_control(rows: list[dict], stem: str, answers: dict[str, str]) -> list[dict]:
    """A control of ``rows``: each row's stem rewritten from its args, its choices renamed by ``answers``."""
    import copy

    out = []
    for r in rows:
        c = copy.deepcopy(r)
        c["id"], c["source_id"] = "c" + r["id"], r["id"]
        c["question"]["stem"] = stem.format(**r["args"])
        for choice in c["question"]["choices"]:
            choice["text"] = answers.get(choice["text"], choice["text"])
        out.append(c)
    return out


def write_toy_probe(folder: Path, n_train: int = 300, n_dev: int = 120) -> Path:
    """The toy probe (:func:`toy_rows`) with its NO-LANG and perturbed controls, as a probe folder of variants."""
    import json

    train, dev = toy_rows(n_train, 1, "train"), toy_rows(n_dev, 2, "dev")
    variants = {"original": (train, dev),
                "nolang": tuple(toy_control(r, "{word} [MASK]", {"yes": "blah", "no": "ya"}) for r in (train, dev)),
                "perturbed": tuple(toy_control(r, "the {word} foo [MASK] .", {}) for r in (train, dev))}
    for variant, (tr, dv) in variants.items():
        (folder / variant).mkdir(parents=True)
        for split, rows in (("train", tr), ("dev", dv)):
            (folder / variant / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (folder / variant / "meta.json").write_text(json.dumps(
            {"probe": "toy", "variant": variant, "fingerprint": f"fp-{variant}"}))
    return folder


def alias_bomb(levels: int = 7, width: int = 9) -> str:
    """YAML whose last anchor expands to ``width ** levels`` strings, each level ``width`` aliases of the one below."""
    lines = ['a0: &a0 ["x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def save_tiny_t5(path: Path, tokenizer) -> Path:
    """A random two-layer T5ForConditionalGeneration (seed 0) for ``tokenizer``, saved with it in ``path``."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(d_model=32, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=2, d_kv=16,
                      vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id)
    T5ForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def small_age_comparison(out: Path, **section) -> Path:
    """AGE COMPARISON as `probes generate` writes it, small (train 12, dev 6; its `original` and `nolang` variants
    unless ``section`` says otherwise), at ``out``; the params file beside ``out``."""
    import yaml

    from probes.main import main

    out.parent.mkdir(parents=True, exist_ok=True)
    params = out.parent / f"params-{out.name}.yaml"
    params.write_text(yaml.safe_dump({"age_comparison": {"size": {"train": 12, "dev": 6},
                                                         "variants": ["original", "nolang"], **section}}))
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(out)]) == 0
    return out


def edited_probe(tmp_path: Path, monkeypatch, edit, probe: str = "age_comparison") -> Path:
    """A copy of ``probe``'s YAML in ``tmp_path``, ``edit(text) -> text`` applied, that the registry reads instead of
    the real one (``probes generate`` and ``build_probe`` included)."""
    from generators.shared import registry

    path = tmp_path / f"{probe}.yaml"
    path.write_text(edit(registry.get(probe).template_path.read_text(encoding="utf-8")), encoding="utf-8")
    monkeypatch.setattr(type(registry.get(probe)), "template_path",
                        property(lambda self: path if self.probe == probe else self.module_path.parent / "probe.yaml"))
    return path


def listed(folder) -> list[str]:
    """The names in ``folder``, sorted, but probekit's ledger of the loose files it wrote there
    (``.probekit-files.json``, :mod:`probekit.outputs`)."""
    from probekit.outputs import LEDGER

    return sorted(name for name in os.listdir(folder) if name != LEDGER)


def profile_section(tmp_path: Path, profile: str, name: str, model):
    """Params section ``name`` of ``conf/`` composed with ``profile`` (as `dvc exp run -S profile=...` composes it),
    read through its typed model ``model``."""
    import yaml
    from dvc.utils.hydra import compose_and_dump

    from probekit.params import ParamsFile, section

    out = tmp_path / f"{profile}.yaml"
    compose_and_dump(out, str(REPO / "conf"), None, "config", str(tmp_path / "no-plugins"), [f"profile={profile}"])
    return section(ParamsFile(out, yaml.safe_load(out.read_text(encoding="utf-8"))), name, model)
