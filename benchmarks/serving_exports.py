"""Every task's raw-text SavedModel with the dense layers on real tokens (``--export_real_tokens``, the default) against
the same export computing every position (``--noexport_real_tokens``, what exports served before): mixed-length
request batches, a single short request, and the answers of both.

Per task, one randomly initialised ALBERT-base model (``--seed``; time does not depend on the weights' values) is
exported twice with the package's own export function (``export_classifier``, ``export_squad``,
``export_multiple_choice``, ``export_tagger``), differing only in ``real_tokens``; both SavedModels are loaded as TF
Serving loads them (``tf.saved_model.load``, the ``serving_default`` signature) and sent the same raw-text requests
from real data:

* ``classifier``: MRPC dev pairs (``<shared data>/glue/MRPC/dev.tsv``), ``--batch`` (16) consecutive pairs a request,
  ``max_seq_length`` 128;
* ``squad_v1`` / ``squad_v2``: questions of ``squad/dev-v2.0-subset-a.json``, the first question of every paragraph
  (so the contexts, and the number and fill of the 384-token windows, differ within a request), ``--batch`` / 2 a
  request;
* ``race``: RACE dev questions (``race/RACE/dev``) with their articles and four options, ``--batch`` / 4 a request,
  ``max_seq_length`` 512 a choice;
* ``tagging``: WNUT 2017 dev sentences (``ner/wnut17/emerging.dev.conll``), ``--batch`` sentences a request,
  ``max_seq_length`` 128.

The single short request is the shortest example of the task's requests on its own, sent ``--short_repeats`` times a
round (it takes tens of milliseconds, so a median of three would be noise). The driver interleaves the two exports
request by request (which goes first alternates) over ``--rounds`` rounds after one untimed round (every shape
traced); latency is the median per request; ``*_speedup`` = every-position median / real-token median.
Answers: SQuAD, the predicted texts and character spans must be identical; tagging, the tags; the classifier and
RACE, the probabilities and logits within 1e-5 (the largest difference is reported). Records the share of the
CPUs other processes used (``foreign_cpu_share_*``). ``--smoke``: a 2-layer H 64 model, 2 requests, 1 round, the
short request once.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import ForeignLoad, emit, machine_info, set_tf_threads, shared_data_dir, versions  # noqa: E402

TASKS = ("classifier", "squad_v1", "squad_v2", "race", "tagging")
LENGTHS = {"classifier": 128, "squad_v1": 384, "squad_v2": 384, "race": 512, "tagging": 128}
SQUAD_WINDOW = dict(doc_stride=128, max_query_length=64)
RACE_MAX_QA_LENGTH = 128
#: outputs compared as numbers (within TOLERANCE) or exactly (strings, spans, ids)
TOLERANCE = 1e-5


def _config(args: argparse.Namespace, seq: int):
    from albert_tf.config import AlbertConfig

    config = AlbertConfig.from_name("albert_base_v2").replace(max_position_embeddings=max(512, seq))
    if args.smoke:
        config = config.replace(hidden_size=64, num_attention_heads=2, intermediate_size=128, num_hidden_layers=2)
    return config


def requests_of(task: str, args: argparse.Namespace) -> tuple[list[dict[str, list]], dict[str, list]]:
    """``--requests`` request batches of the task's real examples (signature input name -> values) and the single
    short request."""
    shared = args.shared
    n = {"classifier": args.batch, "tagging": args.batch, "race": max(1, args.batch // 4)}.get(task,
                                                                                            max(1, args.batch // 2))
    if task == "classifier":
        from albert_tf.data import glue

        examples = glue.get_processor("mrpc").read_examples(str(shared / "glue" / "MRPC" / "dev.tsv"), glue.DEV)
        rows = [{"text_a": e.text_a, "text_b": e.text_b} for e in examples]
        size = [len(r["text_a"]) + len(r["text_b"]) for r in rows]
    elif task.startswith("squad"):
        from albert_tf.data.squad.reader import read_squad_examples

        examples = read_squad_examples(str(shared / "squad" / "dev-v2.0-subset-a.json"), is_training=False)
        rows, seen = [], set()
        for e in examples:  # the first question of every paragraph
            if e.paragraph_text not in seen:
                seen.add(e.paragraph_text)
                rows.append({"question": e.question_text, "context": e.paragraph_text})
        size = [len(r["context"]) for r in rows]
    elif task == "race":
        from albert_tf.data.race.reader import read_race_examples

        examples = read_race_examples(str(shared / "race"), "dev")
        rows = [{"article": e.article, "question": e.question, "options": list(e.options)} for e in examples]
        size = [len(r["article"]) for r in rows]
    else:
        from albert_tf.data.tagging.reader import read_conll

        sentences = read_conll(str(shared / "ner" / "wnut17" / "emerging.dev.conll"))
        rows = [{"sentence": " ".join(s.words)} for s in sentences]
        size = [len(r["sentence"]) for r in rows]
    if len(rows) < n * args.requests:
        raise SystemExit(f"{task}: {len(rows)} examples, fewer than {n} x --requests={args.requests}")
    batches = [rows[k * n:(k + 1) * n] for k in range(args.requests)]
    shortest = min(range(n * args.requests), key=lambda i: size[i])

    def columns(chunk: list[dict]) -> dict[str, list]:
        return {k: [r[k] for r in chunk] for k in chunk[0]}

    return [columns(b) for b in batches], columns([rows[shortest]])


def export_both(task: str, args: argparse.Namespace, work: str) -> dict[str, str]:
    """The task's model exported with ``real_tokens`` True and False: ``{"real_tokens": dir, "every_position":
    dir}``."""
    import keras

    from albert_tf.export.savedmodel import make_preprocessor

    seq = LENGTHS[task]
    keras.utils.set_random_seed(args.seed)
    config = _config(args, seq)
    preprocessor = make_preprocessor(args.spm_model_file, seq)
    if task == "classifier":
        from albert_tf.tasks.glue.export import export_classifier
        from albert_tf.tasks.glue.model import AlbertClassifier

        model = AlbertClassifier(config, 2)

        def export(path, real):
            export_classifier(model, path, labels=["0", "1"], text_pair=True, preprocessor=preprocessor,
                              real_tokens=real)
    elif task.startswith("squad"):
        from albert_tf.tasks.squad.export import export_squad
        from albert_tf.tasks.squad.model import AlbertSquad

        model = AlbertSquad(config, version_2_with_negative=task == "squad_v2")

        def export(path, real):
            export_squad(model, path, preprocessor=preprocessor, real_tokens=real, **SQUAD_WINDOW)
    elif task == "race":
        from albert_tf.tasks.race.export import export_multiple_choice
        from albert_tf.tasks.race.model import AlbertMultipleChoice

        model = AlbertMultipleChoice(config)

        def export(path, real):
            export_multiple_choice(model, path, max_qa_length=RACE_MAX_QA_LENGTH, preprocessor=preprocessor,
                                   real_tokens=real)
    else:
        from albert_tf.data.tagging.reader import read_conll
        from albert_tf.tasks.tagging.export import export_tagger
        from albert_tf.tasks.tagging.model import AlbertTagger

        sentences = read_conll(str(args.shared / "ner" / "wnut17" / "wnut17train.conll"))
        labels = sorted({t for s in sentences for t in s.tags}, key=lambda t: (t != "O", t))
        model = AlbertTagger(config, labels)

        def export(path, real):
            export_tagger(model, path, preprocessor=preprocessor, real_tokens=real)
    paths = {}
    for name, real in (("real_tokens", True), ("every_position", False)):
        paths[name] = os.path.join(work, task, name, "1")
        export(paths[name], real)
    return paths


def compare(task: str, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """How the two exports' answers to one request differ: ``same`` (the strings, spans and ids), ``max_difference``
    of the float outputs."""
    import numpy as np

    exact = {"squad_v1": ("answer", "start", "end", "has_answer"), "squad_v2": ("answer", "start", "end", "has_answer"),
             "tagging": ("tags", "entity_text", "entity_start", "entity_end"), "classifier": ("label",),
             "race": ("answer",)}[task]
    numeric = {"classifier": ("probabilities", "logits"), "race": ("probabilities", "logits"),
               "squad_v1": ("score",), "squad_v2": ("score", "null_score")}.get(task, ())
    same = all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in exact if k in a)
    difference = max((float(np.abs(np.asarray(a[k], np.float64) - np.asarray(b[k], np.float64)).max())
                      for k in numeric), default=0.0)
    return {"same": bool(same), "max_difference": difference}


def measure(task: str, args: argparse.Namespace, work: str) -> dict[str, Any]:
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the signatures' SentencePiece ops)

    batches, short = requests_of(task, args)
    paths = export_both(task, args, work)
    served = {name: tf.saved_model.load(path).signatures["serving_default"] for name, path in paths.items()}

    def call(name: str, request: dict[str, list]) -> dict[str, Any]:
        out = served[name](**{k: tf.constant(v) for k, v in request.items()})
        return {k: v.numpy() for k, v in out.items()}

    checks = [compare(task, call("real_tokens", r), call("every_position", r)) for r in [*batches, short]]
    times: dict[str, dict[str, list[float]]] = {"mixed": {n: [] for n in served}, "short": {n: [] for n in served}}
    meter, foreign, names = ForeignLoad([os.getpid()]), [], list(served)
    for round_index in range(args.rounds):
        for i, request in enumerate([*batches, *[short] * args.short_repeats]):
            kind = "short" if i >= len(batches) else "mixed"
            meter.start()
            order = names if (round_index + i) % 2 == 0 else names[::-1]
            for name in order:
                t = time.perf_counter()
                call(name, request)
                times[kind][name].append(time.perf_counter() - t)
            foreign.append(meter.stop())
    median = {kind: {n: statistics.median(ts) for n, ts in by.items()} for kind, by in times.items()}
    quiet = [f for f in foreign if f is not None]
    return {
        "max_seq_length": LENGTHS[task],
        "examples_per_request": len(next(iter(batches[0].values()))),
        "answers_identical": all(c["same"] for c in checks),
        "max_output_difference": float(f"{max(c['max_difference'] for c in checks):.3g}"),
        "median_mixed_request_s": {n: float(f"{v:.4g}") for n, v in median["mixed"].items()},
        "median_short_request_s": {n: float(f"{v:.4g}") for n, v in median["short"].items()},
        "mixed_speedup": round(median["mixed"]["every_position"] / median["mixed"]["real_tokens"], 3),
        "short_speedup": round(median["short"]["every_position"] / median["short"]["real_tokens"], 3),
        "foreign_cpu_share_median": round(statistics.median(quiet), 3) if quiet else None,
        "foreign_cpu_share_max": max(quiet) if quiet else None,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(TASKS), help=f"comma list of {', '.join(TASKS)}")
    parser.add_argument("--batch", type=int, default=16,
                        help="examples a request: classifier and tagging this many, SQuAD half, RACE a quarter")
    parser.add_argument("--requests", type=int, default=4, help="different mixed-length requests")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds over the requests (one untimed first)")
    parser.add_argument("--short_repeats", type=int, default=5, help="times the short request is sent a round")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true",
                        help="a 2-layer H 64 model, 2 requests of 4, 1 round, the short request once")
    parser.add_argument("--spm_model_file", default=None, help="default: <shared data>/spm/30k-clean.model")
    parser.add_argument("--output", default="", help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.batch, args.requests, args.rounds, args.short_repeats = 4, 2, 1, 1
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown or not tasks:
        parser.error(f"--tasks: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(TASKS)}")
    args.shared = shared_data_dir()
    args.spm_model_file = args.spm_model_file or str(args.shared / "spm" / "30k-clean.model")
    if not os.path.isfile(args.spm_model_file):
        parser.error(f"{args.spm_model_file}: no such file (set ALBERT_TF_SHARED_DATA or pass the flag)")
    set_tf_threads(args.threads)
    work = tempfile.mkdtemp(prefix="serving_exports_")
    results = {}
    try:
        for task in tasks:
            results[task] = measure(task, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = {
        "benchmark": "albert_serving_exports_real_tokens",
        "model": "smoke" if args.smoke else "albert_base_v2",
        "requests": args.requests, "rounds": args.rounds, "short_repeats": args.short_repeats,
        "dtype": "float32", "threads": args.threads,
        "machine": machine_info(), "versions": versions(),
        "results": results,
    }
    return emit(summary, args.output)


if __name__ == "__main__":
    main()
