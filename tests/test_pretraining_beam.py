"""The Beam executor of create_pretraining_data writes what the local pipeline writes.

On real text (``../shared/data/text``) and the real 30k-clean model: the same multiset of serialized records
(sorted bytes compared) and the same sidecar counts as the local pipeline, on the DirectRunner in memory and in
multi-process mode; byte-identical shards whatever the number of Beam workers; bad input (undecodable bytes,
empty and blank-only files) counted or reported as the local pipeline does.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
from conftest import shared_path

beam = pytest.importorskip("apache_beam")

from albert_tf.data.pretraining import (  # noqa: E402
    InputError,
    PretrainingDataConfig,
    TokenizerSpec,
    create_pretraining_data,
)
from albert_tf.data.pretraining.beam import create_pretraining_data_beam, record_key  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Files of three kinds of real text; small chunks, so chunks span file boundaries and there are several of them.
FILES = (("gutenberg_hobil", "us_constitution.txt"), ("nltk_inaugural", "1789-Washington.txt"),
         ("gutenberg_hobil", "alice_in_wonderland.txt"), ("nltk_inaugural", "1865-Lincoln.txt"))
CONFIG = {"max_seq_length": 128, "dupe_factor": 2, "chunk_size_mb": 0.04, "shuffle_buffer_size": 64,
          "random_seed": 7}
IN_MEMORY = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
MULTI_PROCESS = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
# Per-executor fields: which shard a record lands in (local: round-robin after its buffer; Beam: a key).
PER_FILE = ("instances_per_output_file",)


@pytest.fixture(scope="module")
def spec():
    return TokenizerSpec(spm_model_file=str(shared_path("spm", "30k-clean.model")))


@pytest.fixture(scope="module")
def text_files():
    return [str(shared_path("text", *parts)) for parts in FILES]


def _records(paths) -> list[bytes]:
    import tensorflow as tf

    return sorted(r for p in paths for r in tf.data.TFRecordDataset([p]).as_numpy_iterator())


def _sidecar(summary) -> dict:
    with open(summary["metadata_file"]) as f:
        return json.load(f)


def _comparable_counts(summary) -> dict:
    return {k: v for k, v in summary["counts"].items() if k not in PER_FILE}


def _local(tmp_path, files, spec, config, name="local", shards=3):
    return create_pretraining_data(files, str(tmp_path / name / f"r@{shards}"), spec, config, log=None)


def _beam(tmp_path, files, spec, config, options, name="beam", shards=3):
    return create_pretraining_data_beam(files, str(tmp_path / name / f"r@{shards}"), spec, config, options=options,
                                        log=None)


@pytest.mark.heavy
def test_beam_writes_the_local_records_in_memory_and_multi_process(tmp_path, text_files, spec):
    config = PretrainingDataConfig(**CONFIG)
    local = _local(tmp_path, text_files, spec, config)
    assert local["counts"]["chunks"] > 3 and local["counts"]["instances"] > 300
    expected = _records(local["output_files"])
    sidecars = []
    for name, options in (("in_memory", IN_MEMORY), ("multi_process", MULTI_PROCESS)):
        got = _beam(tmp_path, text_files, spec, config, options, name=name)
        assert _records(got["output_files"]) == expected, name
        assert _comparable_counts(got) == _comparable_counts(local), name
        assert sum(got["counts"]["instances_per_output_file"]) == local["counts"]["instances"]
        sidecars.append(_sidecar(got))
    # Two worker settings, one output: the same bytes in every shard (contents and order).
    assert sidecars[0]["files"] == sidecars[1]["files"]
    # The sidecar layout of the local run, plus the executor's note; flags and tokenizer identical.
    local_sidecar = _sidecar(local)
    for sidecar in sidecars:
        assert set(sidecar) == set(local_sidecar) | {"executor"}
        for key in ("format", "flags", "tokenizer", "input_files", "output_files"):
            assert sidecar[key] == local_sidecar[key], key
        assert sidecar["executor"]["engine"] == "apache_beam"
        assert [e["name"] for e in sidecar["files"]] == [e["name"] for e in local_sidecar["files"]]
    # Only complete shards and the sidecar are left (no partial files).
    assert sorted(os.listdir(tmp_path / "in_memory")) == ["r-00000-of-00003", "r-00001-of-00003",
                                                          "r-00002-of-00003", "r.json"]


@pytest.mark.heavy
def test_shard_order_is_the_key_order(tmp_path, text_files, spec):
    """Records within a Beam shard are sorted by their keys; a key does not depend on the shard count."""
    config = PretrainingDataConfig(**{**CONFIG, "dupe_factor": 1})
    one = _beam(tmp_path, text_files[:2], spec, config, IN_MEMORY, name="one", shards=1)
    two = _beam(tmp_path, text_files[:2], spec, config, IN_MEMORY, name="two", shards=2)
    assert _records(one["output_files"]) == _records(two["output_files"])
    assert record_key(7, 0, 0) == record_key(7, 0, 0) != record_key(7, 0, 1) != record_key(8, 0, 1)
    assert 0 <= record_key(7, 3, 5) < 1 << 63


@pytest.mark.heavy
def test_bad_input_counted_as_locally(tmp_path, text_files, spec):
    """Empty and blank-only files and latin-1 bytes (read with --input_encoding): the local counts; undecodable
    bytes under utf-8: the local error (file, line, byte offset), no output."""
    bad = tmp_path / "latin.txt"
    bad.write_bytes(b"first line of a document\nna\xefve caf\xe9 au lait\n\nanother document here\n")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.txt"
    blank.write_bytes(b"\n  \n\t\n\n")
    control = tmp_path / "control.txt"
    control.write_bytes(b"\x01\x02\n\nthe harbor .\n")
    files = [str(empty), text_files[0], str(bad), str(blank), str(control)]
    config = PretrainingDataConfig(**{**CONFIG, "input_encoding": "iso-8859-1"})
    local = _local(tmp_path, files, spec, config)
    got = _beam(tmp_path, files, spec, config, IN_MEMORY)
    assert local["counts"]["empty_files"] == 1 and local["counts"]["blank_only_files"] == 1
    assert local["counts"]["empty_documents"] >= 1
    assert _comparable_counts(got) == _comparable_counts(local)
    assert _records(got["output_files"]) == _records(local["output_files"])

    utf8 = PretrainingDataConfig(**CONFIG)
    with pytest.raises(InputError) as local_error:
        _local(tmp_path, files, spec, utf8, name="local_utf8")
    with pytest.raises(InputError) as beam_error:
        _beam(tmp_path, files, spec, utf8, IN_MEMORY, name="beam_utf8")
    assert "latin.txt: line 2, byte offset 27" in str(local_error.value)
    assert str(beam_error.value) == str(local_error.value)
    assert not [n for n in os.listdir(tmp_path / "beam_utf8") if not n.startswith(".")]
    # Nothing but empty/blank files: the local error.
    with pytest.raises(InputError, match="no text in the input"):
        _beam(tmp_path, [str(empty), str(blank)], spec, utf8, IN_MEMORY, name="beam_blank")


def test_missing_beam_gives_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "apache_beam", None)
    monkeypatch.delitem(sys.modules, "albert_tf.data.pretraining.beam", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'albert-tf\[beam\]'"):
        importlib.import_module("albert_tf.data.pretraining.beam")
    # The command line turns it into its one-line input error.
    from albert_tf.cli.create_pretraining_data import _run_beam

    with pytest.raises(InputError, match=r"--runner=DataflowRunner: .*pip install 'albert-tf\[beam\]'"):
        _run_beam("in.txt", "out.tfrecord", TokenizerSpec(), PretrainingDataConfig(), "DataflowRunner", [], None)


@pytest.mark.heavy
def test_cli_runner_flag(tmp_path, text_files):
    """--runner and Beam options (the flag and after "--") reach the Beam pipeline; a misuse is one line."""
    model = str(shared_path("spm", "30k-clean.model"))
    out = tmp_path / "cli" / "r.tfrecord@2"
    base = [sys.executable, "-m", "albert_tf.cli.create_pretraining_data", f"--input_file={text_files[0]}",
            f"--output_file={out}", f"--spm_model_file={model}", "--max_seq_length=64", "--dupe_factor=1"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([*base, "--runner=DirectRunner", "--beam_pipeline_options=--direct_num_workers=1",
                           "--", "--direct_running_mode=in_memory"], capture_output=True, text=True, cwd=ROOT,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    sidecar = json.loads((tmp_path / "cli" / "r.tfrecord.json").read_text())
    assert sidecar["executor"]["runner"] == "DirectRunner" and sidecar["counts"]["instances"] > 0
    done = subprocess.run([*base, "--", "--direct_num_workers=2"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode != 0 and "need --runner" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_beam_equals_local_on_whole_books_with_document_boundaries(tmp_path, spec):
    """More text (three whole books, ~1.1 MB, read in chunks of 0.5 MB), file_is_document_boundary and the official
    40 dupes' first 2, local with 2 workers vs Beam multi-process with 2 workers and in memory with 3."""
    files = [str(shared_path("text", "gutenberg_hobil", n)) for n in ("hamlet.txt", "sherlock.txt",
                                                                        "war_of_the_worlds.txt")]
    config = PretrainingDataConfig(max_seq_length=256, dupe_factor=2, chunk_size_mb=0.5, random_seed=12345,
                                   file_is_document_boundary=True, shuffle_buffer_size=1000)
    local = create_pretraining_data(files, str(tmp_path / "local" / "r@4"), spec, config, num_workers=2, log=None)
    expected = _records(local["output_files"])
    shards = []
    for name, options in (("mp", MULTI_PROCESS),
                          ("mem3", ["--direct_running_mode=in_memory", "--direct_num_workers=3"])):
        got = create_pretraining_data_beam(files, str(tmp_path / name / "r@4"), spec, config, options=options,
                                           log=None)
        assert _records(got["output_files"]) == expected, name
        assert _comparable_counts(got) == _comparable_counts(local), name
        shards.append(_sidecar(got)["files"])
    assert shards[0] == shards[1]
