"""Every file the package reads or writes goes through ``tf.io.gfile``: proved on TensorFlow's in-memory ``ram://``.

A path the package opened with Python's ``open`` / ``os`` / ``glob`` would not exist under ``ram://``, so a chain
that runs with every input and output there cannot have gone around ``tf.io.gfile`` (which is also what makes
``gs://`` work). The slow test runs the whole chain (create_pretraining_data -> run_pretraining, killed with
SIGKILL and resumed -> run_classifier from the pretraining checkpoint -> SavedModel export -> serving two raw
sentence pairs) in child processes whose working directory, ``TMPDIR`` and ``HOME`` are empty folders, and checks
afterwards that nothing was written there (``tests/ram_chain.py`` is the child). The fast tests pin the single
fixes, including the ``ram://`` quirks of TensorFlow itself that the package works around
(``albert_tf.files`` and ``albert_tf.checkpoints.paths`` say which).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest
import tensorflow as tf
from conftest import ROOT, shared_data_dir, shared_path

from albert_tf import files
from albert_tf.config import AlbertConfig, ConfigError

gfile = tf.io.gfile


@pytest.fixture
def ram():
    """A fresh ``ram://`` folder of this test process, removed afterwards (ram:// is shared by the whole process)."""
    root = f"ram://test-{uuid.uuid4().hex[:12]}"
    yield root
    files.rmtree(root)


def put(path: str, data: bytes) -> str:
    gfile.makedirs(path.rsplit("/", 1)[0])
    with gfile.GFile(path, "wb") as f:
        f.write(data)
    return path


# ------------------------------------------------------------------------------------ the filesystem helpers
def test_tree_helpers_work_around_the_ram_filesystem(ram):
    """TF's ram:// renames only a directory's own entry, cannot rmtree implicit directories and takes any string
    prefix of a name for a directory; the helpers move, list and delete trees file by file there."""
    put(f"{ram}/src/a.txt", b"a")
    put(f"{ram}/src/deep/er/b.bin", b"b")  # no makedirs: implicit directories
    gfile.makedirs(f"{ram}/src/empty")
    put(f"{ram}/src.tmp-1/c", b"c")  # a sibling whose name starts with "src"
    assert gfile.isdir(f"{ram}/sr")  # the TensorFlow quirk the helpers exist for
    assert files.list_tree(f"{ram}/src") == [f"{ram}/src/a.txt", f"{ram}/src/deep/er/b.bin"]
    assert files.has_children(f"{ram}/src") and not files.has_children(f"{ram}/sr")

    files.rename_dir(f"{ram}/src", f"{ram}/dst")
    assert files.list_tree(f"{ram}/dst") == [f"{ram}/dst/a.txt", f"{ram}/dst/deep/er/b.bin"]
    assert files.read_bytes(f"{ram}/dst/deep/er/b.bin") == b"b"
    assert files.list_tree(f"{ram}/src") == [] and not files.has_children(f"{ram}/src")
    assert files.list_tree(f"{ram}/src.tmp-1") == [f"{ram}/src.tmp-1/c"]  # the sibling is untouched

    files.rmtree(f"{ram}/dst")
    assert files.list_tree(f"{ram}/dst") == [] and files.list_tree(ram) == [f"{ram}/src.tmp-1/c"]
    with pytest.raises(ValueError, match="glob characters"):
        files.list_tree(f"{ram}/a*b")


def test_local_helpers_keep_python_semantics(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / ".hidden.txt").write_text("h")
    (tmp_path / "d.txt").mkdir()
    assert files.glob(str(tmp_path / "*.txt")) == [str(tmp_path / "a.txt")]  # no dot files, no directories
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "a.txt")
    assert files.canonical_path(str(link)) == files.canonical_path(str(tmp_path / "a.txt"))
    assert files.canonical_path("gs://Bucket/x//y/./z") == "gs://Bucket/x/y/z"
    assert files.canonical_path("RAM://a/../b") == "ram://b"
    files.rename_dir(str(tmp_path / "d.txt"), str(tmp_path / "e"))
    assert (tmp_path / "e").is_dir()
    files.rmtree(str(tmp_path / "e"))
    files.rmtree(str(tmp_path / "missing"))  # nothing to delete is fine
    assert not (tmp_path / "e").exists()


# ------------------------------------------------------------------------------------ single readers and writers
def test_albert_config_round_trip_on_ram(ram):
    config = AlbertConfig.from_name("albert_tiny").replace(vocab_size=321)
    config.to_json_file(f"{ram}/cfg/albert_config.json")  # the folder exists implicitly on ram://
    assert AlbertConfig.from_json_file(f"{ram}/cfg/albert_config.json") == config
    assert AlbertConfig.load(f"{ram}/cfg/albert_config.json").vocab_size == 321
    with pytest.raises(ConfigError, match="not found"):
        AlbertConfig.from_json_file(f"{ram}/cfg/missing.json")
    put(f"{ram}/cfg/bad.json", b'{"vocab_size": 3,\n')
    with pytest.raises(ConfigError, match="bad.json: line 2: not valid JSON"):
        AlbertConfig.from_json_file(f"{ram}/cfg/bad.json")


def test_tokenizers_load_from_ram(ram, spm_model, wordpiece_vocab):
    from albert_tf.tokenization import FullTokenizer

    text = "The quick brown fox, 1,234 jumps over the lazy dog."
    local = FullTokenizer(spm_model_file=str(spm_model))
    remote = FullTokenizer(spm_model_file=put(f"{ram}/30k.model", spm_model.read_bytes()))
    assert remote.encode(text) == local.encode(text) and remote.identity() == local.identity()
    wp_local = FullTokenizer(vocab_file=str(wordpiece_vocab))
    wp_remote = FullTokenizer(vocab_file=put(f"{ram}/vocab.txt", wordpiece_vocab.read_bytes()))
    wp_bytes = FullTokenizer(vocab_file=wordpiece_vocab.read_bytes())  # what a pipeline worker builds
    assert wp_remote.encode(text) == wp_local.encode(text) == wp_bytes.encode(text)
    assert wp_remote.identity() == wp_local.identity() == wp_bytes.identity()


def test_corpus_and_prepare_text_read_and_write_ram(ram):
    from albert_tf.data.prepare_text import prepare_files
    from albert_tf.tokenization.corpus import corpus_files, iter_lines

    put(f"{ram}/books/b.txt", b"Mr. Smith left. He came back!\n\nA second paragraph.\n")
    put(f"{ram}/books/a.txt", "Caf\xe9 au lait.\n".encode("iso-8859-1"))
    put(f"{ram}/books/.hidden", b"skipped")
    assert corpus_files([f"{ram}/books"]) == [f"{ram}/books/a.txt", f"{ram}/books/b.txt"]
    assert list(iter_lines([f"{ram}/books"]))[0] == "Caf\xe9 au lait."
    counts = prepare_files([f"{ram}/books/b.txt"], f"{ram}/out/corpus.txt")
    assert counts["sentences"] == 3
    assert files.read_text(f"{ram}/out/corpus.txt") == "Mr. Smith left.\nHe came back!\nA second paragraph.\n"
    assert files.list_tree(f"{ram}/out") == [f"{ram}/out/corpus.txt"]  # the temporary name is gone


def test_train_vocab_reads_and_writes_ram(ram, tmp_path, monkeypatch):
    """Inputs read through tf.io.gfile; SentencePiece trains into a local scratch folder (it writes local files
    only), which is removed once the .model/.vocab are copied to the ram:// prefix."""
    from albert_tf.data.sample_corpus import generate_documents
    from albert_tf.tokenization.train_vocab import train_vocab

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    text = "\n\n".join("\n".join(doc) for doc in generate_documents(200, seed=1)) + "\n"
    put(f"{ram}/corpus/docs.txt", text.encode())
    summary = train_vocab([f"{ram}/corpus"], f"{ram}/spm/tiny", vocab_size=120, num_threads=1)
    assert summary["model"] == f"{ram}/spm/tiny.model" and summary["vocab_size"] == 120
    assert files.list_tree(f"{ram}/spm") == [f"{ram}/spm/tiny.model", f"{ram}/spm/tiny.vocab"]
    assert files.read_text(f"{ram}/spm/tiny.vocab").splitlines()[2].startswith("[CLS]\t")
    assert list(tmp_path.iterdir()) == []  # the scratch folder is gone


def _pipeline_inputs(tmp_path, ram, spm_model):
    from albert_tf.data.sample_corpus import write_sample_corpus

    corpus = tmp_path / "corpus.txt"
    write_sample_corpus(str(corpus), num_documents=60, seed=3)
    return corpus, put(f"{ram}/in/corpus.txt", corpus.read_bytes()), put(f"{ram}/in/spm.model", spm_model.read_bytes())


def _shards(paths):
    return [hashlib.sha256(files.read_bytes(p)).hexdigest() for p in paths]


def test_pretraining_data_to_ram_equals_local(tmp_path, ram, spm_model):
    """Records + sidecar written to ram:// (inputs and model there too) are the bytes a local run writes."""
    from albert_tf.data.pretraining.pipeline import PretrainingDataConfig, create_pretraining_data
    from albert_tf.data.pretraining.reading import InputError
    from albert_tf.data.pretraining.vocabulary import TokenizerSpec

    corpus, ram_corpus, ram_spm = _pipeline_inputs(tmp_path, ram, spm_model)
    config = PretrainingDataConfig(max_seq_length=48, max_predictions_per_seq=6, dupe_factor=2, chunk_size_mb=0.002)
    local = create_pretraining_data([str(corpus)], str(tmp_path / "out" / "rec@2"),
                                    TokenizerSpec(spm_model_file=str(spm_model)), config, log=None)
    remote = create_pretraining_data(f"{ram}/in/*.txt", f"{ram}/out/rec@2", TokenizerSpec(spm_model_file=ram_spm),
                                     config, log=None)
    assert remote["output_files"] == [f"{ram}/out/rec-00000-of-00002", f"{ram}/out/rec-00001-of-00002"]
    assert _shards(remote["output_files"]) == _shards(local["output_files"])
    assert files.list_tree(f"{ram}/out") == sorted([*remote["output_files"], f"{ram}/out/rec.json"])  # no partials
    sidecar = json.loads(files.read_text(remote["metadata_file"]))
    local_sidecar = json.loads((tmp_path / "out" / "rec.json").read_text())
    assert sidecar["files"] == local_sidecar["files"] and sidecar["input_files"] == [ram_corpus]
    with pytest.raises(InputError, match="both an input and an output"):
        create_pretraining_data([ram_corpus], f"{ram}/in//./corpus.txt", TokenizerSpec(spm_model_file=ram_spm),
                                config, log=None)
    with pytest.raises(InputError, match="file not found"):
        create_pretraining_data([ram_corpus], f"{ram}/x", TokenizerSpec(spm_model_file=f"{ram}/nope.model"),
                                config, log=None)


def test_pretraining_data_workers_never_open_ram_files(tmp_path, ram, spm_model):
    """Worker processes cannot see the parent's ram:// (it is per process): they get the model's bytes instead of
    its path, and the parent reads the input and writes the records, so ``--num_workers=2`` works there too."""
    from albert_tf.data.pretraining.pipeline import PretrainingDataConfig, create_pretraining_data
    from albert_tf.data.pretraining.vocabulary import TokenizerSpec

    _, ram_corpus, ram_spm = _pipeline_inputs(tmp_path, ram, spm_model)
    config = PretrainingDataConfig(max_seq_length=48, max_predictions_per_seq=6, dupe_factor=2, chunk_size_mb=0.002)
    spec = TokenizerSpec(spm_model_file=ram_spm)
    one = create_pretraining_data([ram_corpus], f"{ram}/one/rec", spec, config, num_workers=1, log=None)
    two = create_pretraining_data([ram_corpus], f"{ram}/two/rec", spec, config, num_workers=2, log=None)
    assert one["counts"]["chunks"] > 2
    assert _shards(two["output_files"]) == _shards(one["output_files"])


def test_checkpoint_prefix_on_ram(ram):
    """On ram:// every checkpoint prefix also "is a directory" (TF quirk): it still resolves to itself and reads."""
    from albert_tf.checkpoints.paths import checkpoint_reader, list_variables, resolve_checkpoint_path

    ckpt = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0]))
    prefix = tf.train.CheckpointManager(ckpt, f"{ram}/run", max_to_keep=None).save(checkpoint_number=20)
    assert prefix == f"{ram}/run/ckpt-20" and gfile.isdir(prefix)
    assert resolve_checkpoint_path(prefix) == prefix
    assert resolve_checkpoint_path(f"{ram}/run") == prefix
    assert resolve_checkpoint_path(prefix + ".index") == prefix
    assert [n for n, _ in list_variables(prefix)] == sorted(checkpoint_reader(prefix).get_variable_to_shape_map())
    assert ("v/.ATTRIBUTES/VARIABLE_VALUE", [2]) in list_variables(prefix)


def test_huggingface_directory_on_ram(ram):
    pytest.importorskip("safetensors")
    from albert_tf.checkpoints.huggingface import load_huggingface, read_huggingface_config, save_huggingface
    from albert_tf.modeling import AlbertEncoder

    config = AlbertConfig.from_name("albert_tiny")
    source, target = AlbertEncoder(config), AlbertEncoder(config)
    ids = np.array([[2, 10, 20, 3]], np.int32)
    feed = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    source(feed), target(feed)
    save_huggingface(source, f"{ram}/hf")
    assert read_huggingface_config(f"{ram}/hf")["vocab_size"] == config.vocab_size
    assert load_huggingface(target, f"{ram}/hf").complete
    for a, b in zip(source.weights, target.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_savedmodel_export_and_info_on_ram(ram):
    from albert_tf.export.savedmodel import load_export_info, write_savedmodel_atomic

    module = tf.Module()
    module.v = tf.Variable(3.0)
    module.f = tf.function(lambda x: x * module.v, input_signature=[tf.TensorSpec([], tf.float32)])
    export = f"{ram}/export/7"
    put(f"{ram}/export/70/keep", b"a later version whose name starts with 7")
    write_savedmodel_atomic(export, lambda tmp: tf.saved_model.save(module, tmp), {"kind": "test"})
    assert load_export_info(export) == {"kind": "test"}
    assert float(tf.saved_model.load(export).f(tf.constant(2.0))) == 6.0
    assert {p.rsplit("/", 2)[-2] for p in files.list_tree(f"{ram}/export")} >= {"7", "variables", "70"}
    assert not [p for p in files.list_tree(f"{ram}/export") if ".tmp-" in p]
    with pytest.raises(FileExistsError):
        write_savedmodel_atomic(export, lambda tmp: tf.saved_model.save(module, tmp), {})


@pytest.mark.heavy
def test_encoder_export_writes_no_local_scratch(ram, tmp_path, monkeypatch):
    """The encoder export's config asset is staged in ram://, not in a local temporary folder."""
    from albert_tf.export.encoder import export_encoder
    from albert_tf.modeling import AlbertEncoder

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    encoder = AlbertEncoder(AlbertConfig.from_name("albert_tiny"))
    ids = np.array([[2, 3]], np.int32)
    encoder({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)})
    export_encoder(encoder, f"{ram}/encoder")
    assert json.loads(files.read_text(f"{ram}/encoder/assets/albert_config.json"))["hidden_size"] == 32
    assert not [p for p in files.list_tree("ram://") if "albert_export_scratch" in p]
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith("__autograph_generated_file")]


# ------------------------------------------------------------------------------------ the whole chain
def _child_env(home: pathlib.Path, tmp: pathlib.Path) -> dict[str, str]:
    """The environment of a chain process: every place a library could cache to points into ``home``/``tmp``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("KERAS_HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                        "TFHUB_CACHE_DIR", "TMP", "TEMP", "PYTHONPYCACHEPREFIX")}
    env.update(HOME=str(home), TMPDIR=str(tmp), TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(ROOT),
               PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", CUDA_VISIBLE_DEVICES="")
    return env


def _sandbox(base: pathlib.Path, name: str) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    dirs = tuple(base / name / part for part in ("cwd", "tmp", "home"))
    for d in dirs:
        d.mkdir(parents=True)
    return dirs


def _files_under(folder: pathlib.Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir()}


def _run(args, base: pathlib.Path, name: str, stdin: bytes | None = None):
    cwd, tmp, home = _sandbox(base, name)
    proc = subprocess.run([sys.executable, *args], input=stdin, capture_output=True, cwd=cwd,
                          env=_child_env(home, tmp), timeout=900)
    return proc, cwd, tmp, home


@pytest.mark.slow
def test_whole_chain_on_ram_with_kill_and_resume(tmp_path):
    shared = shared_data_dir()
    for parts in (("spm", "30k-clean.model"), ("glue", "MRPC", "train.tsv"), ("text", "nltk_inaugural")):
        shared_path(*parts)  # skips cleanly where the real data is absent
    chain = str(ROOT / "tests" / "ram_chain.py")
    t0 = time.time()

    # What `import keras` writes into an empty HOME by itself (Keras creates ~/.keras/keras.json; it imports
    # matplotlib, which builds its font cache under ~/.cache/matplotlib and ~/.config/matplotlib).
    base, _, base_tmp, base_home = _run(["-c", "import tensorflow, keras, tensorflow_text"], tmp_path, "baseline")
    assert base.returncode == 0, base.stderr.decode()[-3000:]
    import_files = _files_under(base_home)

    # Phase 1: inputs -> ram://, records, pretraining until the watchdog's kill -9 (the snapshot is its stdout).
    p1, cwd1, tmp1, home1 = _run([chain, "phase1", str(shared)], tmp_path, "phase1")
    assert p1.returncode == -signal.SIGKILL, (p1.returncode, p1.stderr.decode()[-3000:])
    snapshot = p1.stdout
    assert snapshot.startswith(b"ALBERT-TF-RAM-SNAPSHOT-1\n") and len(snapshot) > 1_000_000

    # Phase 2: a fresh process, the snapshot as its ram://; resume, fine-tune, export, serve.
    p2, cwd2, tmp2, home2 = _run([chain, "phase2"], tmp_path, "phase2", stdin=snapshot)
    assert p2.returncode == 0, p2.stderr.decode()[-5000:]
    result = json.loads(p2.stdout.decode())
    seconds = time.time() - t0

    # Killed in the middle: the snapshot holds a checkpoint, but not the last one.
    killed_step = int(result["killed_at"].rsplit("-", 1)[1])
    assert 20 <= killed_step < 120 and killed_step % 20 == 0, result["killed_at"]
    assert "ram://chain/pretrain/ckpt-120.index" not in result["snapshot_files"]
    assert "ram://chain/pretrain/run.lock" in result["snapshot_files"]  # the killed run's lock, taken over
    # Resumed from that checkpoint, not from step 0, and trained to the end.
    assert result["logged_steps"][0] == killed_step + 4 and result["logged_steps"][-1] == 120
    assert result["pretrain_global_step"] == 120
    assert result["pretrain_curves"]["loss"][-1] == 120 and result["pretrain_curves"]["loss"][0] == 4

    # Fine-tuned from the ram:// pretraining checkpoint; both checkpoints evaluated; the export answers raw text.
    assert [h["global_step"] for h in result["glue"]["eval"]] == [10, 20]
    init = result["glue"]["init_reports"]
    loaded = re.search(r"checkpoint ram://chain/pretrain/ckpt-120: loaded (\d+), missing (\d+)", init[0])
    encoder = re.search(r"encoder weights: loaded (\d+), missing 0, unused 0, shape mismatches 0", init[-1])
    assert len(init) == 2 and loaded and encoder and int(encoder.group(1)) == int(loaded.group(1)), init
    assert int(loaded.group(1)) >= 20 and int(loaded.group(2)) == 2, init  # all but the new classifier's 2 variables
    info = result["export_info"]
    export = f"ram://chain/export/{info['global_step']}"  # the best checkpoint's step
    assert result["glue"]["export_dir"] == export and info["checkpoint"] == "ram://chain/mrpc/best/ckpt-best"
    assert info["max_seq_length"] == 64 and info["labels"] == ["0", "1"]
    assert len(result["answers"]) == 2
    for answer in result["answers"]:
        assert answer["label"] in ("0", "1") and abs(sum(answer["probabilities"]) - 1) < 1e-5

    tree = set(result["ram_tree"])
    expected = [
        "ram://chain/records/train.tfrecord-00000-of-00002", "ram://chain/records/train.tfrecord-00001-of-00002",
        "ram://chain/records/train.tfrecord.json",
        "ram://chain/pretrain/ckpt-120.index", "ram://chain/pretrain/run_summary.json",
        "ram://chain/mrpc/ckpt-20.index", "ram://chain/mrpc/best/ckpt-best.index", "ram://chain/mrpc/eval_results.json",
        f"{export}/saved_model.pb", f"{export}/variables/variables.index", f"{export}/assets.extra/albert_export.json",
    ]
    assert [p for p in expected if p not in tree] == []
    for logdir in ("ram://chain/pretrain/train", "ram://chain/mrpc/train", "ram://chain/mrpc/eval"):
        assert [p for p in tree if p.startswith(f"{logdir}/events.out.tfevents.")], logdir
    assert not [p for p in tree if ".tmp-" in p or p.endswith(".partial")]

    # Nothing on the local disk: the working directories and TMPDIRs stay empty, HOME holds only what
    # `import keras` writes by itself. One exception, from TensorFlow itself: AutoGraph writes the code it
    # generates for each tf.function to $TMPDIR/__autograph_generated_file*.py and deletes it at exit (atexit),
    # which a kill -9 skips, so the killed phase leaves those behind (phase 2, which exits, leaves none).
    assert _files_under(cwd1) == set() and _files_under(cwd2) == set()
    assert _files_under(tmp2) == set() and _files_under(base_tmp) == set()
    leftovers = _files_under(tmp1)
    assert all(n.startswith("__autograph_generated_file") and n.endswith(".py") for n in leftovers), leftovers
    assert _files_under(home1) <= import_files and _files_under(home2) <= import_files, (import_files,)
    print(json.dumps({"seconds": round(seconds, 1), "killed_at": result["killed_at"],
                      "first_step_after_resume": result["logged_steps"][0], "answers": result["answers"],
                      "phase1_autograph_files": len(leftovers), "home_files_from_import": sorted(import_files)}))
