"""Expensive test artefacts, built once per test session and read by every test that needs them.

What is here: tiny task models (random weights, a scaled head so that inputs answer apart) with their SavedModel
exports, and a short real fine-tuning run of each task. A test that checks a property of an export or of a run reads
one of these; only tests about exporting or training themselves export or train.

How an artefact is shared:

* It is a folder under the session's shared temporary folder: the parent of each xdist worker's ``basetemp`` (common
  to all workers of one ``pytest -n 2`` run), or the ``basetemp`` itself without xdist.
* The first test that asks for it builds it, holding an exclusive ``fcntl.flock`` on ``<name>.lock``: a second worker
  that asks meanwhile waits for that build instead of running its own.
* It is built in a fork-server child (:func:`commands.run`), so the build's random seeds, models and traced functions
  stay out of the test process (``keras.utils.set_random_seed`` clears TensorFlow's eager kernel cache, and with it
  the SentencePiece resource of a preprocessor a test module built before), and what the test process did before
  cannot change the artefact.
* It is written to ``<name>.tmp-<pid>`` and renamed to ``<name>`` when complete: a folder named ``<name>`` is whole,
  so no reader ever sees half an artefact.
* Each worker notes what it built and what it waited for in ``built-by-<worker>.log`` beside the artefacts.

Readers must not write into an artefact: a test that writes beside an export (a ``.tflite`` or ``.onnx`` file at its
default path) works on its own copy (:func:`copy_export`).

Run as a script (by :func:`build_once`, never by hand): ``artefacts.py KIND FOLDER [ARGS...]`` builds one artefact
into FOLDER.
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import shutil
import sys
import time

import commands

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: The longest the build of one artefact may take (seconds; a loaded two-core machine).
BUILD_TIMEOUT = 1800
SPEC = "artefact.json"


# ------------------------------------------------------------------------------------------------- sharing
def shared_root(tmp_path_factory) -> pathlib.Path:
    """The folder the artefacts of this test session live in (the same for every xdist worker of the session)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "artefacts"
    root.mkdir(parents=True, exist_ok=True)
    return root


def build_once(tmp_path_factory, name: str, kind: str, *args: str) -> pathlib.Path:
    """The folder of the artefact ``name``, built by ``artefacts.py kind <folder> *args`` in a fork-server child if
    no worker of this session has built it yet (see the module docstring)."""
    root = shared_root(tmp_path_factory)
    final = root / name
    if final.is_dir():
        return final
    with open(root / f"{name}.lock", "a") as lock:
        asked = time.monotonic()
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes, however this ends
        if final.is_dir():  # another worker built it while this one waited
            _log(root, f"{name}: waited {time.monotonic() - asked:.0f} s for another worker's build")
        else:
            tmp = root / f"{name}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            try:
                # the server's start-up variables, whatever a library imported before changed in os.environ
                # (tf2onnx's conversion sets TF_CPP_MIN_LOG_LEVEL=3 there)
                env = {**os.environ, **commands.SERVER_ENV}
                done = commands.run([__file__, kind, str(tmp), *args], cwd=ROOT, env=env, timeout=BUILD_TIMEOUT)
                if done.returncode != 0:
                    raise RuntimeError(f"building the test artefact {name} failed (exit status {done.returncode}):"
                                       f"\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
                os.rename(tmp, final)
                _log(root, f"{name}: built in {time.monotonic() - asked:.0f} s")
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return final


def _log(root: pathlib.Path, line: str) -> None:
    """One line in ``<root>/built-by-<worker>.log`` (what this worker built, what it waited for): how a run shows
    that each artefact was built once. One file per worker: two workers never write the same file."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(root / f"built-by-{worker}.log", "a") as log:
        log.write(f"{line}\n")


def copy_export(export_dir: str | os.PathLike, into: pathlib.Path) -> str:
    """A private copy of an export, ``into/<version>`` (a test that writes files beside the export uses one)."""
    source = pathlib.Path(export_dir)
    target = pathlib.Path(into) / source.name
    shutil.copytree(source, target)
    return str(target)


def _key(spm_model) -> str:
    """The artefacts' name part that says which SentencePiece model they were built with."""
    return pathlib.Path(spm_model).stem


# ------------------------------------------------------------------------------------------------- models
def tiny_config(vocab_size: int, **overrides):
    """``albert_tiny`` with at least the official 30,000 ids whatever the tokenizer (the embedding table is then most
    of the weights, as in every released model, which the TFLite quantized sizes depend on; the substitute
    SentencePiece model of a checkout without ``../shared`` has 250 pieces)."""
    from albert_tf.config import AlbertConfig

    return AlbertConfig.from_name("albert_tiny").replace(vocab_size=max(int(vocab_size), 30000), **overrides)


def new_model(kind: str, config, **options):
    """A task model (built, random weights): ``classifier`` (``num_labels``), ``squad`` (``version_2``) or
    ``race``."""
    if kind == "classifier":
        from albert_tf.tasks.glue.model import AlbertClassifier

        return AlbertClassifier(config, num_labels=int(options["num_labels"]))
    if kind == "squad":
        from albert_tf.tasks.squad.model import AlbertSquad

        return AlbertSquad(config, version_2_with_negative=bool(options["version_2"]))
    if kind == "race":
        from albert_tf.tasks.race.model import AlbertMultipleChoice

        return AlbertMultipleChoice(config)
    raise ValueError(kind)


def _head(model, kind: str, options: dict):
    if kind == "squad":
        return model.squad_output if not options["version_2"] else None
    return model.head


#: Each export artefact: its models (kind, seed, head scale, options, config overrides) and its exports (the export
#: function's options per variant, on which model).
EXPORTS = {
    # A 3-label pair classifier with a threshold (a scalar output): the raw-text / TF1 tests, TFLite and ONNX.
    "classifier": {
        "seq": 64,
        "models": {"model": {"kind": "classifier", "seed": 7, "scale": 200.0, "options": {"num_labels": 3}}},
        "exports": {"default": {"model": "model", "labels": ["contradiction", "entailment", "neutral"],
                                "text_pair": True, "threshold": 0.25}},
    },
    # An STS-B style single-sentence regression (``score``).
    "regression": {
        "seq": 64,
        "models": {"model": {"kind": "classifier", "seed": 11, "scale": 200.0, "options": {"num_labels": 1}}},
        "exports": {"default": {"model": "model", "labels": None, "text_pair": False}},
    },
    # One 3-layer 2-label pair classifier at max_seq_length 128, exported four ways: the default (length buckets,
    # real tokens), the official padding (every position of 128), buckets without real tokens, and XLA.
    "classifier_variants": {
        "seq": 128,
        "models": {"model": {"kind": "classifier", "seed": 7, "scale": 200.0, "options": {"num_labels": 2},
                             "config": {"num_hidden_layers": 3}}},
        "exports": {
            "default": {"model": "model", "labels": ["0", "1"], "text_pair": True},
            "padded": {"model": "model", "labels": ["0", "1"], "text_pair": True, "bucket_lengths": None,
                       "real_tokens": False},
            "bucketed": {"model": "model", "labels": ["0", "1"], "text_pair": True, "real_tokens": False},
            "xla": {"model": "model", "labels": ["0", "1"], "text_pair": True, "jit_compile": True},
        },
    },
    # SQuAD v1 (logits of order 1) and v2 (the beam), SEQ 64, doc_stride 24, max_query_length 16.
    "squad": {
        "seq": 64,
        "models": {"v1": {"kind": "squad", "seed": 3, "scale": 50.0, "options": {"version_2": False}},
                   "v2": {"kind": "squad", "seed": 3, "scale": 1.0, "options": {"version_2": True}}},
        "exports": {name: {"model": name, "doc_stride": 24, "max_query_length": 16, "max_answer_length": 8,
                           "metadata": {"task": "squad"}} for name in ("v1", "v2")},
    },
    # A 4-choice model whose choices answer clearly apart, SEQ 64, max_qa_length 16.
    "race": {
        "seq": 64,
        "models": {"model": {"kind": "race", "seed": 7, "scale": 5000.0, "options": {}}},
        "exports": {"default": {"model": "model", "max_qa_length": 16, "metadata": {"task": "race"}}},
    },
}


class Exports:
    """An export artefact as its readers see it: ``path(variant)`` the SavedModel (``<variant>/1``),
    ``model(name)`` the Keras model it was exported from (weights read back from the artefact), ``seq`` its
    ``max_seq_length``."""

    def __init__(self, folder: pathlib.Path) -> None:
        self.folder = folder
        self.spec = json.loads((folder / SPEC).read_text())
        self.seq = int(self.spec["seq"])
        self._models: dict = {}

    def path(self, variant: str = "default") -> str:
        return str(self.folder / variant / "1")

    def config(self, name: str = "model"):
        """The ``AlbertConfig`` of the model ``name``."""
        from albert_tf.config import AlbertConfig

        return AlbertConfig.from_json_file(str(self.folder / f"{name}.json"))

    def model(self, name: str = "model"):
        """The Keras model ``name`` (built from its config, its weights read from the artefact; one per process)."""
        if name not in self._models:
            spec = self.spec["models"][name]
            model = new_model(spec["kind"], self.config(name), **spec["options"])
            model.load_weights(str(self.folder / f"{name}.weights.h5"))
            self._models[name] = model
        return self._models[name]


_OPENED: dict[pathlib.Path, Exports] = {}


def exports(tmp_path_factory, spm_model, name: str) -> Exports:
    """The export artefact ``name`` of :data:`EXPORTS`, tokenized by ``spm_model`` (built on first use; one
    :class:`Exports` per process)."""
    folder = build_once(tmp_path_factory, f"{name}-{_key(spm_model)}", "exports", name, str(spm_model))
    if folder not in _OPENED:
        _OPENED[folder] = Exports(folder)
    return _OPENED[folder]


def _build_exports(folder: pathlib.Path, name: str, spm_model: str) -> None:
    import keras

    from albert_tf.tokenization import AlbertPreprocessor, FullTokenizer

    spec = EXPORTS[name]
    tokenizer = FullTokenizer(spm_model_file=spm_model)
    preprocessor = AlbertPreprocessor.from_tokenizer(tokenizer, spec["seq"])
    models = {}
    for model_name, m in spec["models"].items():
        config = tiny_config(tokenizer.vocab_size, **m.get("config", {}))
        keras.utils.set_random_seed(m["seed"])
        model = new_model(m["kind"], config, **m["options"])
        head = _head(model, m["kind"], m["options"])
        if head is not None and m["scale"] != 1.0:
            head.kernel.assign(head.kernel * m["scale"])  # answers differ clearly between inputs
        config.to_json_file(str(folder / f"{model_name}.json"))
        model.save_weights(str(folder / f"{model_name}.weights.h5"))
        models[model_name] = (m["kind"], model)
    for variant, options in spec["exports"].items():
        options = dict(options)
        kind, model = models[options.pop("model")]
        path = str(folder / variant / "1")
        if kind == "classifier":
            from albert_tf.tasks.glue.export import export_classifier

            export_classifier(model, path, preprocessor=preprocessor, **options)
        elif kind == "squad":
            from albert_tf.tasks.squad.export import export_squad

            export_squad(model, path, preprocessor=preprocessor, **options)
        else:
            from albert_tf.tasks.race.export import export_multiple_choice

            export_multiple_choice(model, path, preprocessor=preprocessor, **options)
    (folder / SPEC).write_text(json.dumps(spec, indent=1))


# ------------------------------------------------------------------------------------------- fine-tuning runs
#: The tasks of :func:`fine_tuned_run`.
RUN_TASKS = ("classifier", "regression", "squad_v1", "squad_v2", "race", "tagging")
RUN_SEQ = 64


def fine_tuned_run(tmp_path_factory, task: str) -> str:
    """A two-step fine-tuning run of ``task`` (:data:`RUN_TASKS`) on real data (``../shared/data``: MRPC, STS-B,
    SQuAD 2.0 subset-a, RACE, WNUT 2017), small config (``conftest.write_small_config``), max_seq_length 64,
    learning rate 1e-3; returns its last checkpoint (``ckpt-2``, beside its ``albert_config.json``). Skips the
    calling test where the real data is absent."""
    from conftest import shared_path

    shared_path("spm", "30k-clean.model")
    needs = {"classifier": ("glue", "MRPC"), "regression": ("glue", "STS-B"), "squad_v1": ("squad",),
             "squad_v2": ("squad",), "race": ("race",), "tagging": ("ner", "wnut17")}
    shared_path(*needs[task])
    return str(build_once(tmp_path_factory, f"run-{task}", "run", task) / task / "ckpt-2")


def _build_run(root: pathlib.Path, task: str) -> None:
    from conftest import shared_path, write_small_config

    config = write_small_config(root / "albert_config_small.json")
    spm = str(shared_path("spm", "30k-clean.model"))
    out = root / task
    common = dict(albert_config_file=config, spm_model_file=spm, output_dir=str(out), do_train=True)
    if task in ("classifier", "regression"):
        from albert_tf.tasks import glue
        from albert_tf.tasks.glue.task import run

        run(glue.make_config(data_dir=str(shared_path("glue")), task_name="MRPC" if task == "classifier" else "STS-B",
                             max_seq_length=RUN_SEQ, train_batch_size=8, learning_rate=1e-3, train_step=2,
                             save_checkpoints_steps=2, cached_dir=str(root / f"cache_{task}"), **common))
    elif task.startswith("squad"):
        from albert_tf.evaluation.squad_metrics import answerable_subset
        from albert_tf.tasks import squad
        from albert_tf.tasks.squad.task import run

        data = json.loads(shared_path("squad", "dev-v2.0-subset-a.json").read_text())
        v2 = task == "squad_v2"
        train = root / f"{task}.json"
        train.write_text(json.dumps(data if v2 else {"version": "1.1", "data": answerable_subset(data["data"])}))
        run(squad.make_config(train_file=str(train), version_2_with_negative=v2, max_seq_length=RUN_SEQ,
                              doc_stride=32, max_query_length=16, num_train_steps=2, train_batch_size=8,
                              learning_rate=1e-3, save_checkpoints_steps=2, steps_per_loop=1, **common))
    elif task == "tagging":
        from albert_tf.tasks import tagging
        from albert_tf.tasks.tagging.task import run

        sentences = shared_path("ner", "wnut17", "wnut17train.conll").read_text("utf-8").split("\n\n")[:32]
        train = root / "wnut17_head.conll"
        train.write_text("\n\n".join(sentences) + "\n\n", encoding="utf-8")
        run(tagging.make_config(train_file=str(train), max_seq_length=RUN_SEQ, num_train_steps=2, train_batch_size=8,
                                learning_rate=1e-3, save_checkpoints_steps=2, **common))
    elif task == "race":
        from albert_tf.tasks import race
        from albert_tf.tasks.race.task import run

        run(race.make_config(data_dir=str(shared_path("race")), max_seq_length=RUN_SEQ, max_qa_length=16,
                             num_train_steps=2, train_batch_size=4, learning_rate=1e-3, save_checkpoints_steps=2,
                             steps_per_loop=1, **common))
    else:
        raise ValueError(task)
    if not (out / "ckpt-2.index").is_file():
        raise RuntimeError(f"the {task} run wrote no ckpt-2: {sorted(os.listdir(out))}")


if __name__ == "__main__":
    kind, folder = sys.argv[1], pathlib.Path(sys.argv[2])
    {"exports": _build_exports, "run": _build_run}[kind](folder, *sys.argv[3:])
