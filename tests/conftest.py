"""Shared test fixtures.

* ``shared_data`` / ``shared_path(...)``: the real data in ``../shared/data`` beside the
  project root (or ``$ALBERT_TF_SHARED_DATA``); tests that need it skip cleanly where it is
  absent, as in a user's fresh clone.
* ``spm_model`` / ``wordpiece_vocab`` / ``english_lines(...)``: *some* SentencePiece model, WordPiece vocab or
  English text, for tests whose checks hold for any model or text (plumbing: Python == graph ids, round trips,
  packing, records, export). The real files where ``../shared/data`` is present, else substitutes built from the
  sample corpus, so these tests run in a fresh clone too. Tests of the real files' own ids, pieces or statistics
  use ``shared_path(...)`` and keep skipping without them.
* ``@pytest.mark.slow`` tests run when ``CI`` is set or with ``--run-slow``.
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = pathlib.Path(__file__).resolve().parent.parent


def shared_data_dir() -> pathlib.Path | None:
    """The real-data folder, or None where this checkout has none beside it."""
    env = os.environ.get("ALBERT_TF_SHARED_DATA")
    candidate = pathlib.Path(env) if env else ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def shared_path(*parts: str) -> pathlib.Path:
    """Path under the shared data folder; skips the calling test when it is absent."""
    base = shared_data_dir()
    if base is None:
        pytest.skip("../shared/data is not present (real-data test)")
    path = base.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data file missing: {'/'.join(parts)}")
    return path


def shared_reference(*parts: str) -> pathlib.Path:
    """Path under ``../shared/reference`` (golden files); skips where absent."""
    base = shared_data_dir()
    ref = (base.parent if base is not None else ROOT.parent / "shared") / "reference"
    path = ref.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared reference file missing: {'/'.join(parts)}")
    return path


GOLDEN = ROOT / "tests" / "data" / "official-tokenizer-golden.jsonl.gz"


def golden_cases() -> list[dict]:
    """The official tokenizer's outputs on 304 cases (``../shared/reference/official-tokenizer-golden.jsonl``,
    carried gzipped in ``tests/data`` so a fresh clone has it; ``test_golden_copy_is_the_reference`` checks the
    copy against the reference wherever ``../shared`` is present)."""
    import gzip
    import json

    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def english_lines(n: int, *parts: str) -> list[str]:
    """The first ``n`` non-blank lines of English text, for tests that only need *some* text (no statistics).

    Where ``../shared/data`` is present: the real books under ``text/<parts...>`` (all of ``text/`` when no
    ``parts`` are given; fewer than ``n`` where that text is shorter). Else: the first ``n`` sentences of the
    built-in sample corpus (``generate_documents``, seed 0; at least six per document).
    """
    base = shared_data_dir()
    real = base.joinpath("text", *parts) if base is not None else None
    if real is not None and real.exists():
        from albert_tf.tokenization.corpus import iter_lines

        return list(itertools.islice(iter_lines([real]), n))
    from albert_tf.data.sample_corpus import generate_documents

    lines = [s for doc in generate_documents(max(1, n // 4 + 1), seed=0) for s in doc]
    return lines[:n]


SUBSTITUTE_SPM_VOCAB_SIZE = 250


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory) -> pathlib.Path:
    """A SentencePiece model file for tests whose checks hold for *any* model.

    * ``../shared/data/spm/30k-clean.model`` (the official English model) where it is present;
    * else, as in a fresh clone, a substitute trained once per session on the built-in sample corpus (2,000
      documents, seed 0) with the official ``spm_train`` settings (``train_vocab``; lower-cased as 30k-clean's
      text was): ``<pad>`` = 0, ``<unk>`` = 1, ``[CLS]`` = 2, ``[SEP]`` = 3, ``[MASK]`` = 4, then the official
      user-defined symbols; 250 pieces, the same pieces in every run. Read its size from the model, never 30000.

    A test of 30k-clean's own ids or pieces takes ``shared_path("spm", "30k-clean.model")`` instead.
    """
    base = shared_data_dir()
    real = base / "spm" / "30k-clean.model" if base is not None else None
    if real is not None and real.is_file():
        return real
    from albert_tf.data.sample_corpus import write_sample_corpus
    from albert_tf.tokenization.train_vocab import train_vocab

    d = tmp_path_factory.mktemp("substitute_spm")
    corpus = d / "sample_corpus.txt"
    write_sample_corpus(str(corpus), num_documents=2000, seed=0)
    prefix = d / f"sample-{SUBSTITUTE_SPM_VOCAB_SIZE}"
    train_vocab([corpus], str(prefix), vocab_size=SUBSTITUTE_SPM_VOCAB_SIZE, preprocess=True, num_threads=1)
    return prefix.with_suffix(".model")


@pytest.fixture(scope="session")
def wordpiece_vocab(tmp_path_factory) -> pathlib.Path:
    """A WordPiece vocab file (BERT layout) for tests whose checks hold for *any* WordPiece vocab.

    * ``../shared/data/spm/chinese-wordpiece-vocab.txt`` (the Chinese ALBERT vocab) where it is present;
    * else a small substitute in the same layout: ``[PAD]`` = 0, ``[unused1..99]``, ``[UNK]`` = 100, ``[CLS]`` =
      101, ``[SEP]`` = 102, ``[MASK]`` = 103, then ASCII punctuation, digits and letters, their ``##`` forms, the
      sample corpus's 300 most common words and a few CJK characters.

    A test of the Chinese vocab's own ids or pieces takes ``shared_path("spm", "chinese-wordpiece-vocab.txt")``.
    """
    base = shared_data_dir()
    real = base / "spm" / "chinese-wordpiece-vocab.txt" if base is not None else None
    if real is not None and real.is_file():
        return real
    import collections
    import re
    import string

    from albert_tf.data.sample_corpus import generate_documents

    words: collections.Counter[str] = collections.Counter()
    for doc in generate_documents(500, seed=0):
        for sentence in doc:
            words.update(re.findall(r"[a-z]+", sentence.lower()))
    chars = string.punctuation + string.digits + string.ascii_lowercase
    vocab = ["[PAD]", *(f"[unused{i}]" for i in range(1, 100)), "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += [*chars, *(f"##{c}" for c in string.digits + string.ascii_lowercase)]
    vocab += [w for w, _ in words.most_common(300) if len(w) > 1]
    vocab += list("的是我中文国人大小模型很强北京天安门爱")
    path = tmp_path_factory.mktemp("substitute_wordpiece") / "sample-wordpiece-vocab.txt"
    path.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def shared_data() -> pathlib.Path:
    base = shared_data_dir()
    if base is None:
        pytest.skip("../shared/data is not present (real-data test)")
    return base


def padded_batch(lengths: list[int], seq: int, seed: int = 0) -> dict:
    """A GLUE-like batch padded to ``seq``: random ids (5-249) on the first ``lengths[i]`` positions, zeros after,
    the second half of each example in segment 1, ``label_ids`` 0, 1, 2, ... (numpy int32)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lengths), seq), np.int32)
    mask = np.zeros_like(ids)
    segments = np.zeros_like(ids)
    for row, n in enumerate(lengths):
        ids[row, :n] = rng.integers(5, 250, n)
        mask[row, :n] = 1
        segments[row, n // 2 : n] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments,
            "label_ids": np.arange(len(lengths), dtype=np.int32)}


def sample_corpus_records(folder, sizes: dict[str, int], max_seq_length: int, max_predictions_per_seq: int,
                          dupe_factor: int) -> dict[str, str]:
    """Pretraining records of the package's sample corpus under ``folder``: ``{name: path}`` for each
    ``name: number of documents`` in ``sizes`` (corpus seed 0, 1, ... in that order), tokenized by 30k-clean."""
    from albert_tf.data.pretraining import PretrainingDataConfig, TokenizerSpec, create_pretraining_data
    from albert_tf.data.sample_corpus import write_sample_corpus

    spec = TokenizerSpec(spm_model_file=str(shared_path("spm", "30k-clean.model")))
    records = {}
    for seed, (name, docs) in enumerate(sizes.items()):
        corpus = os.path.join(str(folder), f"{name}.txt")
        write_sample_corpus(corpus, num_documents=docs, seed=seed)
        records[name] = os.path.join(str(folder), f"{name}.tfrecord")
        create_pretraining_data(
            [corpus], records[name], spec,
            PretrainingDataConfig(max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
                                  dupe_factor=dupe_factor, random_seed=seed),
            log=None,
        )
    return records


def write_small_config(path, max_position_embeddings: int = 128) -> str:
    """A 2-layer, H = 64 ALBERT config for the 30k SentencePiece vocabulary, no dropout: the fine-tuning learning
    tests train it from scratch in seconds. Returns the path as a string."""
    config = {
        "vocab_size": 30000, "embedding_size": 32, "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 128, "max_position_embeddings": max_position_embeddings,
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "type_vocab_size": 2,
    }
    pathlib.Path(path).write_text(json.dumps(config))
    return str(path)


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False, help="run tests marked slow")


#: The files that take longest in ``make test`` (tests/README.md), longest first. They are collected before the
#: others, and ``make test`` keeps that order (``--no-loadscope-reorder``: xdist would otherwise hand out the files
#: with the most tests first), so that ``--dist loadfile`` hands them out first and the two workers end close
#: together instead of one starting a long file when the other is done.
LONGEST_FIRST: tuple[str, ...] = (
    "tests/test_reproduce.py", "tests/test_demo_output.py", "tests/test_benchmark_parity.py",
    "tests/test_tpu_readiness.py", "tests/test_benchmark_steps.py", "tests/test_benchmark_serving.py",
    "tests/test_run_classifier_demo.py", "tests/bad_inputs/test_bad_inputs.py", "tests/test_export.py",
    "tests/test_interrupts.py", "tests/test_interrupt_library_calls.py", "tests/bad_inputs/test_entry_points.py",
    "tests/test_convert_task_heads.py", "tests/test_export_squad.py", "tests/test_tokenization_graph.py",
    "tests/test_keras_hub_presets.py", "tests/test_tagging_task.py", "tests/test_recompute.py",
    "tests/test_presets_cli.py", "tests/test_kill_and_lock.py", "tests/test_notebooks.py", "tests/test_squad_task.py",
    "tests/test_console_scripts.py", "tests/test_export_tflite.py", "tests/test_benchmark_finetune.py",
    "tests/test_packing.py", "tests/test_ram_filesystem.py", "tests/test_bucketing.py", "tests/test_export_golden.py",
)


def _longest_first(items) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: order kept in a file


def pytest_collection_modifyitems(config, items):
    _longest_first(items)
    if config.getoption("--run-slow") or os.environ.get("CI"):
        return
    skip = pytest.mark.skip(reason="slow: set CI=1 or pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def installed():
    """albert-tf's signal handlers installed for one test, Python's own put back after it (pytest's Ctrl-C stays
    pytest's); the last line's progress and advice start and end empty."""
    import signal
    import sys

    from albert_tf import interrupts

    saved = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    hook = sys.excepthook
    for s in interrupts.SIGNALS:
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    assert interrupts.install()
    interrupts.note("")
    interrupts.advise(interrupts.RESUME)
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)
    sys.excepthook = hook
    interrupts.note("")
    interrupts.advise(interrupts.RESUME)
    interrupts.forget()  # the signal the test sent is not one a later command in this process received


@pytest.fixture(autouse=True)
def _signals_as_a_shell_leaves_them():
    """Before and after each test, SIGINT and SIGTERM as a shell gives them to a command: a test that left one ignored
    (``SIG_IGN`` is inherited by every process started after it) would make the signal tests of a later test in the
    same worker run their commands deaf to Ctrl-C. The product's own guard is
    ``test_a_command_run_inside_a_process_leaves_no_ignored_signal_behind``."""
    import signal

    def restore():
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    restore()  # before, too: a module import or a fixture outside any test may have left one ignored
    yield
    restore()


@pytest.fixture(autouse=True)
def _environment_as_found():
    """Put ``os.environ`` back as it was before each test: a library a test imports may change it (tf2onnx sets
    ``TF_CPP_MIN_LOG_LEVEL=3``), and ``tests/commands.py`` compares a command's start-up variables with its server's,
    so a later test's commands would otherwise depend on which tests ran before it in the same worker."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)
