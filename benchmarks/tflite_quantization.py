"""Quantized TFLite exports: file size, latency and dev metrics against float32, on trained models.

For a fine-tuned MRPC classifier and a fine-tuned SQuAD v1 model (``run_classifier`` / ``run_squad`` output
folders): the model is exported (``export_checkpoint``, the path ``export_savedmodel`` takes), its token-id
signature converted three times (``convert_signature(quantize=none|dynamic|float16)``, or those of
``--quantizations``), and each ``.tflite`` file measured beside the SavedModel it came from:

* size in bytes (and the ratio to the float32 file);
* latency of one example (batch 1, the file's sequence length: 128 for MRPC as the issue asks, the run's
  ``max_seq_length`` for SQuAD), median of ``--runs`` calls after ``--warmup`` calls, the TFLite interpreter of
  the TensorFlow wheel with its default threads;
* the dev metrics computed from each file's logits by the task's own scoring (``task.aggregate``: GLUE accuracy and
  F1; SQuAD's official exact match and F1 after the n-best search), and their difference to the SavedModel's.

    python benchmarks/tflite_quantization.py --mrpc_run=RUN --squad_run=RUN --squad_file=FILE

A run folder needs its ``albert_config.json`` and a checkpoint (``best/ckpt-best`` or the latest ``ckpt-N``); the
SentencePiece model comes from ``--spm_model_file`` (default the shared 30k-clean.model). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import emit, machine_info, shared_data_dir, versions  # noqa: E402

QUANTIZATIONS = ("none", "dynamic", "float16")


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _checkpoint(run_dir: str) -> str:
    from albert_tf.checkpoints import trainer_layout
    from albert_tf.checkpoints.paths import list_run_checkpoints

    if trainer_layout.has_best(run_dir):
        return trainer_layout.best_prefix(run_dir)
    found = list_run_checkpoints(run_dir)
    if not found:
        raise SystemExit(f"{run_dir}: no best/ckpt-best and no ckpt-N")
    return found[-1][1]


def _features(task, split: str) -> dict:
    """Every feature of ``split`` as numpy arrays, at the full sequence length (bucketing off)."""
    import numpy as np

    batches = list(task.build_inputs(split, 64))
    return {k: np.concatenate([b[k].numpy() for b in batches]) for k in batches[0]}


def _latency(call, feeds: dict, warmup: int, runs: int) -> float:
    for _ in range(warmup):
        call(feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call(feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(task, run_dir: str, export_dir: str, split: str, keys: tuple[str, ...], outputs: tuple[str, ...],
            extra: dict, args: argparse.Namespace) -> dict:
    """Export, convert three ways, and measure each file: size, latency, dev metrics (see the module docstring)."""
    import numpy as np
    import tensorflow as tf

    from albert_tf.export.savedmodel import IDS_SIGNATURE
    from albert_tf.export.tflite import convert_signature, run_tflite
    from albert_tf.training.experiment import export_checkpoint

    checkpoint = _checkpoint(run_dir)
    path = export_checkpoint(task, checkpoint, export_dir)
    features = _features(task, split)
    feeds_all = {k: features[k].astype(np.int32) for k in keys}
    signature = tf.saved_model.load(path).signatures[IDS_SIGNATURE]

    def savedmodel(feeds):
        return {k: v.numpy() for k, v in signature(**{k: tf.constant(v) for k, v in feeds.items()}).items()}

    def in_batches(call):
        n = len(next(iter(feeds_all.values())))
        parts = [call({k: v[i:i + 32] for k, v in feeds_all.items()}) for i in range(0, n, 32)]
        return {k: np.concatenate([p[k] for p in parts]) for k in outputs}

    one = {k: v[:1] for k, v in feeds_all.items()}
    variants = {"savedmodel": {"call": savedmodel, "bytes": None}}
    for quantize in args.quantizations:
        file = convert_signature(path, quantize=quantize)
        variants[f"tflite_{quantize}"] = {"call": (lambda f: lambda feeds: run_tflite(f, feeds))(file),
                                          "bytes": os.path.getsize(file)}
    result = {}
    for name, variant in variants.items():
        logits = in_batches(variant["call"])
        metrics = {k: v for k, v in task.aggregate({**extra(features), **logits}).items()
                   if k != "eval_loss"}  # GLUE's loss needs the model's per-example loss, not served
        result[name] = {"bytes": variant["bytes"], "metrics": metrics,
                        "latency_batch1_seconds": _latency(variant["call"], one, args.warmup, args.runs)}
        log(f"{name}: {result[name]['bytes']} bytes, {result[name]['latency_batch1_seconds'] * 1e3:.1f} ms, "
            f"{ {k: round(v, 4) for k, v in metrics.items() if isinstance(v, float)} }")
    base = result["tflite_none"]
    for r in result.values():
        if r["bytes"]:
            r["size_ratio_to_float32"] = r["bytes"] / base["bytes"]
        r["latency_ratio_to_float32"] = r["latency_batch1_seconds"] / base["latency_batch1_seconds"]
        r["metric_difference_to_savedmodel"] = {
            k: v - result["savedmodel"]["metrics"][k] for k, v in r["metrics"].items()
            if isinstance(v, float) and k in result["savedmodel"]["metrics"]}
    # named relative to its run folder: the JSON is committed, a path of the machine it ran on means nothing elsewhere
    return {"run": os.path.basename(os.path.normpath(run_dir)), "checkpoint": os.path.relpath(checkpoint, run_dir),
            "seq_length": int(feeds_all["input_ids"].shape[1]), "num_examples": int(len(feeds_all["input_ids"])),
            "variants": result}


def mrpc(args: argparse.Namespace, work: str) -> dict:
    from albert_tf.tasks import glue
    from albert_tf.tasks.glue.task import GlueTask
    from albert_tf.training.task import EVAL

    config = glue.make_config(
        task_name="MRPC", data_dir=os.path.join(args.shared_data, "glue"), output_dir=os.path.join(work, "mrpc"),
        albert_config_file=os.path.join(args.mrpc_run, "albert_config.json"), spm_model_file=args.spm_model_file,
        max_seq_length=128, do_eval=True, bucket_lengths="none", cached_dir=os.path.join(work, "cache"))
    task, _ = GlueTask.from_config(config)
    task.prepare()

    def extra(features):
        import numpy as np

        return {"label_ids": features["label_ids"], "loss": np.zeros(len(features["label_ids"]))}

    return measure(task, args.mrpc_run, os.path.join(work, "mrpc_export"), EVAL,
                   ("input_ids", "input_mask", "segment_ids"), ("logits",), extra, args)


def squad(args: argparse.Namespace, work: str) -> dict:
    from albert_tf.tasks import squad
    from albert_tf.tasks.squad.task import SquadTask
    from albert_tf.training.task import PREDICT

    with open(os.path.join(args.squad_run, "run.json"), encoding="utf-8") as f:
        seq = json.load(f)["max_seq_length"]
    config = squad.make_config(
        predict_file=args.squad_file, output_dir=os.path.join(work, "squad"), do_predict=True,
        albert_config_file=os.path.join(args.squad_run, "albert_config.json"), spm_model_file=args.spm_model_file,
        max_seq_length=seq, doc_stride=args.doc_stride, max_query_length=args.max_query_length,
        bucket_lengths="none", cached_dir=os.path.join(work, "cache"))
    task, _ = SquadTask.from_config(config)
    task.prepare()
    return measure(task, args.squad_run, os.path.join(work, "squad_export"), PREDICT,
                   ("input_ids", "input_mask", "segment_ids"), ("start_logits", "end_logits"),
                   lambda features: {"unique_ids": features["unique_ids"]}, args)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mrpc_run", default="", help="a run_classifier --task_name=MRPC output folder")
    p.add_argument("--squad_run", default="", help="a run_squad (v1) output folder")
    p.add_argument("--squad_file", default="", help="the SQuAD file to score (its answerable questions)")
    p.add_argument("--doc_stride", type=int, default=128)
    p.add_argument("--max_query_length", type=int, default=64)
    p.add_argument("--shared_data", default=str(shared_data_dir()))
    p.add_argument("--spm_model_file", default="")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--workdir", default="")
    p.add_argument("--output", default="")
    p.add_argument("--quantizations", default=",".join(QUANTIZATIONS),
                   help="comma list of the .tflite files to convert and measure beside the SavedModel: "
                        f"{', '.join(QUANTIZATIONS)} (default all; none, the float32 file, is always one of them: "
                        "the others' ratios are to it)")
    args = p.parse_args(argv)
    args.quantizations = [q.strip() for q in args.quantizations.split(",") if q.strip()]
    unknown = sorted(set(args.quantizations) - set(QUANTIZATIONS))
    if unknown:
        p.error(f"--quantizations: unknown {', '.join(unknown)}; choose from {', '.join(QUANTIZATIONS)}")
    if "none" not in args.quantizations:
        p.error("--quantizations must include none (the float32 file the other files are compared to)")
    args.spm_model_file = args.spm_model_file or os.path.join(args.shared_data, "spm", "30k-clean.model")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    work = args.workdir or tempfile.mkdtemp(prefix="tflite_quantization_")
    result = {"benchmark": "tflite_quantization", "settings": {"runs": args.runs, "warmup": args.warmup,
                                                               "quantizations": args.quantizations,
                                                               "batch": 1, "threads": "interpreter default"}}
    if args.mrpc_run:
        result["mrpc"] = mrpc(args, work)
    if args.squad_run:
        result["squad_v1"] = squad(args, work)
    result.update(machine=machine_info(), versions=versions())
    return emit(result, args.output)


if __name__ == "__main__":
    main()
