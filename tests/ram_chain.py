"""The child process of ``tests/test_ram_filesystem.py``: the whole albert-tf chain with every path under ``ram://``.

TensorFlow's in-memory filesystem lives in one process, so the chain runs in-process through the library calls
(not the command lines), and a kill -9 is emulated the way it looks on ``gs://``, where storage outlives the job:

    python tests/ram_chain.py phase1 SHARED_DATA_DIR
        copies the inputs (a few text files, the SentencePiece model, a cut of MRPC, the ALBERT config) into
        ram://, runs create_pretraining_data, then run_pretraining with a watchdog thread that waits for the
        first checkpoint (the trainer's on_checkpoint event), writes a consistent snapshot of the whole ram:// tree
        to stdout while training goes on and SIGKILLs its own process in the middle of training.
    python tests/ram_chain.py phase2 < snapshot
        restores the snapshot into its own ram://, resumes run_pretraining to the end, runs run_classifier from the
        pretraining checkpoint (train, eval, export), loads the export from ram:// and answers two raw sentence
        pairs; prints one JSON line of results.

Only the inputs are read from the local disk (phase 1). stdout carries the protocol alone: the process keeps fd 1
for it and points fd 1 at stderr, so whatever the libraries print goes to stderr.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import struct
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

MAGIC = b"ALBERT-TF-RAM-SNAPSHOT-1\n"
IN = "ram://in"
RECORDS = "ram://chain/records/train.tfrecord"
PRETRAIN_DIR = "ram://chain/pretrain"
GLUE_DIR = "ram://chain/mrpc"
EXPORT_DIR = "ram://chain/export"
SEQ, PRED = 64, 10
TEXT_FILES = 10
GLUE_ROWS = {"train.tsv": 300, "dev.tsv": 100}
PRETRAIN = {
    "albert_config_file": f"{IN}/albert_config.json",
    "input_file": f"{RECORDS}-*",
    "output_dir": PRETRAIN_DIR,
    "max_seq_length": SEQ,
    "max_predictions_per_seq": PRED,
    "train_batch_size": 8,
    "num_train_steps": 120,
    "num_warmup_steps": 0,
    "learning_rate": 0.005,
    "steps_per_loop": 4,
    "save_checkpoints_steps": 20,
    "keep_checkpoint_max": 3,
}
PAIRS = [
    ("The company said its profit rose sharply in the third quarter.",
     "Profit at the company rose sharply in the third quarter, it said."),
    ("The storm closed every school in the county on Monday.",
     "Shares of the bank fell after the report was published."),
]


def protocol_stream():
    """A binary stream on the original stdout; fd 1 then points at stderr (library prints stay off the protocol)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


# ----------------------------------------------------------------------------------------------- snapshots
def read_tree() -> dict[str, bytes]:
    """Every file of this process' ram:// filesystem with its content."""
    import tensorflow as tf

    from albert_tf import files

    out = {}
    for path in files.list_tree("ram://"):
        try:
            with tf.io.gfile.GFile(path, "rb") as f:
                out[path] = f.read()
        except tf.errors.NotFoundError:  # renamed or deleted between the listing and the read
            out[path] = None
    return out


def consistent_snapshot(attempts: int = 200) -> dict[str, bytes]:
    """Read the tree twice in a row until both reads agree (names and bytes).

    Training writes on while the watchdog reads; two identical consecutive reads show the state of one instant
    (every file held those bytes from its first read until its second, and the second listing came in between),
    which is what storage holds at the instant of a kill -9.
    """
    previous = read_tree()
    for _ in range(attempts):
        current = read_tree()
        if current == previous and None not in current.values():
            return current
        previous = current
    raise RuntimeError("the ram:// tree never held still for two consecutive reads")


def write_snapshot(stream, tree: dict[str, bytes]) -> None:
    stream.write(MAGIC)
    for path, data in sorted(tree.items()):
        name = path.encode("utf-8")
        stream.write(struct.pack(">I", len(name)) + name + struct.pack(">Q", len(data)) + data)
    stream.write(struct.pack(">I", 0))  # the end mark: a truncated snapshot is refused
    stream.flush()


def read_snapshot(stream) -> dict[str, bytes]:
    data = stream.read()
    if not data.startswith(MAGIC):
        raise ValueError("stdin holds no ram:// snapshot")
    pos, tree = len(MAGIC), {}
    while True:
        (n,) = struct.unpack_from(">I", data, pos)
        pos += 4
        if n == 0:
            if pos != len(data):
                raise ValueError("bytes after the snapshot's end mark")
            return tree
        name = data[pos : pos + n].decode("utf-8")
        pos += n
        (size,) = struct.unpack_from(">Q", data, pos)
        pos += 8
        if pos + size > len(data):
            raise ValueError("truncated snapshot")
        tree[name] = data[pos : pos + size]
        pos += size


def restore_tree(tree: dict[str, bytes]) -> None:
    import tensorflow as tf

    for path, data in tree.items():
        tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(data)


# ----------------------------------------------------------------------------------------------- phase 1
def copy_inputs(shared: str) -> None:
    """Local inputs -> ram://in (read from the disk, written only to memory)."""
    import tensorflow as tf

    from albert_tf.config import AlbertConfig

    def put(data: bytes, path: str) -> None:
        tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(data)

    def local(*parts: str) -> bytes:
        with open(os.path.join(shared, *parts), "rb") as f:
            return f.read()

    texts = sorted(os.listdir(os.path.join(shared, "text", "nltk_inaugural")))[:TEXT_FILES]
    for name in texts:
        put(local("text", "nltk_inaugural", name), f"{IN}/text/{name}")
    put(local("spm", "30k-clean.model"), f"{IN}/spm/30k-clean.model")
    for name, rows in GLUE_ROWS.items():  # the header and the first rows
        lines = local("glue", "MRPC", name).splitlines(keepends=True)
        put(b"".join(lines[: rows + 1]), f"{IN}/glue/MRPC/{name}")
    AlbertConfig.from_name("albert_tiny").replace(vocab_size=30000).to_json_file(f"{IN}/albert_config.json")


def create_records() -> dict:
    from albert_tf.data.pretraining.pipeline import PretrainingDataConfig, create_pretraining_data
    from albert_tf.data.pretraining.vocabulary import TokenizerSpec

    config = PretrainingDataConfig(max_seq_length=SEQ, max_predictions_per_seq=PRED, dupe_factor=4,
                                   file_is_document_boundary=True, random_seed=7)
    summary = create_pretraining_data(f"{IN}/text/*.txt", f"{RECORDS}@2",
                                      TokenizerSpec(spm_model_file=f"{IN}/spm/30k-clean.model"), config,
                                      num_workers=1, log=lambda m: print(m, file=sys.stderr))
    return summary["counts"]


def watchdog(stream, checkpointed: threading.Event) -> None:
    """Wait for the first checkpoint to be recorded (the trainer's ``on_checkpoint``, called once the checkpoint and
    the state file naming it are written), snapshot the ram:// tree to ``stream`` while training goes on, then
    kill -9 this process."""
    if not checkpointed.wait(timeout=600):  # a bound that only a hang reaches
        return
    tree = consistent_snapshot()
    write_snapshot(stream, tree)
    stream.close()
    os.kill(os.getpid(), signal.SIGKILL)


def phase1(shared: str) -> None:
    stream = protocol_stream()
    copy_inputs(shared)
    create_records()
    from albert_tf.tasks import pretraining
    from albert_tf.tasks.pretraining.task import run as run_pretraining

    checkpointed = threading.Event()
    thread = threading.Thread(target=watchdog, args=(stream, checkpointed), daemon=True)
    thread.start()
    run_pretraining(pretraining.make_config(**PRETRAIN), log=lambda m: print(m, file=sys.stderr, flush=True),
                    on_checkpoint=lambda step: checkpointed.set())
    raise SystemExit("phase 1: training finished before the watchdog killed it")


# ----------------------------------------------------------------------------------------------- phase 2
def phase2() -> None:
    stream = protocol_stream()
    tree = read_snapshot(sys.stdin.buffer)
    restore_tree(tree)

    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the SentencePiece ops the export's raw-text signature needs
    from absl import logging as absl_logging

    from albert_tf import files
    from albert_tf.export.savedmodel import load_export_info
    from albert_tf.tasks import glue, pretraining
    from albert_tf.tasks.glue.task import run as run_glue
    from albert_tf.tasks.pretraining.task import run as run_pretraining
    from albert_tf.training.summaries import read_scalar_curves

    killed_at = tf.train.latest_checkpoint(PRETRAIN_DIR)
    steps: list[int] = []
    init_reports: list[str] = []

    class InitReport(logging.Handler):  # the "init_checkpoint <report>" line the trainer logs through absl
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if message.startswith("init_checkpoint"):
                init_reports.append(message.splitlines()[0])

    absl_logging.set_verbosity(absl_logging.INFO)
    logging.getLogger("absl").addHandler(InitReport())

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)
        if message.startswith("step "):
            steps.append(int(message.split()[1].split("/")[0]))

    pretrain = run_pretraining(pretraining.make_config(**PRETRAIN), log=log)
    glue_summary = run_glue(glue.make_config(
        data_dir=f"{IN}/glue", task_name="MRPC", output_dir=GLUE_DIR, albert_config_file=f"{IN}/albert_config.json",
        spm_model_file=f"{IN}/spm/30k-clean.model", init_checkpoint=PRETRAIN_DIR, max_seq_length=SEQ,
        do_train=True, do_eval=True, train_step=20, save_checkpoints_steps=10, train_batch_size=16,
        eval_batch_size=50, learning_rate=1e-3, export_dir=EXPORT_DIR,
    ))
    export = glue_summary["export_dir"]
    served = tf.saved_model.load(export).signatures["serving_default"]
    out = served(text_a=tf.constant([a for a, _ in PAIRS]), text_b=tf.constant([b for _, b in PAIRS]))
    answers = [{"label": label.decode(), "probabilities": [float(p) for p in probs]}
               for label, probs in zip(out["label"].numpy(), out["probabilities"].numpy(), strict=True)]
    listing = {p: hashlib.sha256(files.read_bytes(p)).hexdigest()[:12] for p in files.list_tree("ram://")}
    result = {
        "snapshot_files": sorted(tree),
        "killed_at": killed_at,
        "logged_steps": steps,
        "pretrain_global_step": pretrain["global_step"],
        "pretrain_curves": {k: [s for s, _ in v] for k, v in read_scalar_curves(f"{PRETRAIN_DIR}/train").items()},
        "glue": {"global_step": glue_summary["global_step"], "eval": glue_summary["eval"],
                 "export_dir": export, "init_reports": init_reports},
        "export_info": load_export_info(export),
        "answers": answers,
        "ram_tree": listing,
    }
    stream.write((json.dumps(result, default=str) + "\n").encode("utf-8"))
    stream.flush()


if __name__ == "__main__":
    if sys.argv[1:2] == ["phase1"] and len(sys.argv) == 3:
        phase1(sys.argv[2])
    elif sys.argv[1:] == ["phase2"]:
        phase2()
    else:
        raise SystemExit(__doc__)
