"""Activation memory of a fine-tuning step with and without ``--recompute_activations``, and what it costs.

One ALBERT classifier fine-tuning step (forward, official softmax loss, gradients, the official AdamWeightDecay
update) of ALBERT-large v2 at seq 512, batch 4, float32, on the CPU, each measurement in its own process:

* **activation memory**: the peak resident memory of the steps above the floor that the weights, the optimizer
  state, the traced step and TensorFlow itself occupy. The floor is read after a first step (tracing, Grappler's
  rewrite, kernel caches) and freed memory handed back to the kernel (``malloc_trim``), then the peak is reset
  (``/proc/self/clear_refs``) and read again after the timed steps (``VmHWM``). ``MALLOC_MMAP_THRESHOLD_`` makes
  every tensor of 64 KiB or more its own mapping, so a freed activation leaves the resident set at once instead of
  staying in a malloc arena.
* **step time**: the median of the timed steps (every step after the first).
* **largest batch under a memory cap**: the peak resident memory of the whole process (weights, optimizer state,
  TensorFlow and the activations) measured at two batch sizes per mode and extended linearly (activation memory
  is linear in the batch); the predicted largest batch under ``--cap_gib`` is then run once, and its peak is
  reported beside the prediction.

    python benchmarks/activation_memory.py                        # ALBERT-large, seq 512, batch 4 (long)
    python benchmarks/activation_memory.py --model=albert_base_v2 --seq=128 --batch=2 --steps=2   # minutes
    python benchmarks/activation_memory.py --model=albert_tiny --seq=32 --batch=2 --steps=1 --repeats=1 \
        --check_largest=0                                                  # checks the script (a minute)

Prints JSON with ``activation_memory_ratio`` (without / with) and ``step_time_ratio`` (with / without) on top.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import emit, machine_info, versions  # noqa: E402

MMAP_THRESHOLD = 65536
GIB = 1024**3


def _status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in bytes."""
    out = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) * 1024
    return out


def _trim() -> None:
    import ctypes

    ctypes.CDLL("libc.so.6").malloc_trim(0)


def child(args: argparse.Namespace) -> dict:
    """One process: build, trace, measure the floor, run the steps, measure the peak and the step times."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import numpy as np
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.modeling.recompute import set_recompute
    from albert_tf.tasks.glue.model import AlbertClassifier, classification_per_example_loss
    from albert_tf.training.optimizers import AdamWeightDecay

    keras.utils.set_random_seed(0)
    config = AlbertConfig.from_name(args.model)
    model = AlbertClassifier(config, num_labels=2)
    rng = np.random.default_rng(0)
    batch = {
        "input_ids": tf.constant(rng.integers(5, config.vocab_size, (args.batch, args.seq)), tf.int32),
        "input_mask": tf.ones((args.batch, args.seq), tf.int32),
        "segment_ids": tf.constant(np.repeat([[0] * (args.seq // 2) + [1] * (args.seq - args.seq // 2)],
                                             args.batch, axis=0), tf.int32),
    }
    labels = tf.constant(rng.integers(0, 2, (args.batch,)), tf.int32)
    model({k: v[:, :8] for k, v in batch.items()}, training=False)
    blocks = set_recompute(model, args.recompute)
    optimizer = AdamWeightDecay(learning_rate=1e-5)  # weight decay 0.01 except LayerNorm and bias, eps 1e-6
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=args.jit_compile)
    def step(features, labels):
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = tf.reduce_mean(classification_per_example_loss(logits, labels, 2))
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    losses = [float(step(batch, labels))]  # traced and run once: the graph, Grappler's rewrite, kernel caches
    _trim()
    floor = _status()["VmRSS"]
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # VmHWM := VmRSS
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        losses.append(float(step(batch, labels)))
        times.append(time.perf_counter() - start)
    peak = _status()["VmHWM"]
    weights = sum(int(np.prod(v.shape)) * 4 for v in model.trainable_variables)
    slots = sum(int(np.prod(v.shape)) * 4 for v in optimizer.variables if len(v.shape))
    return {"recompute_activations": bool(args.recompute), "blocks": blocks, "batch": args.batch, "seq": args.seq,
            "floor_bytes": floor, "peak_bytes": peak, "activation_bytes": peak - floor,
            "weight_bytes": weights, "optimizer_state_bytes": slots,
            "step_seconds": times, "median_step_seconds": statistics.median(times) if times else None,
            "losses": losses}


def measure(args: argparse.Namespace, recompute: bool, batch: int, steps: int) -> dict:
    """:func:`child` in a fresh process."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(MMAP_THRESHOLD), TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=ROOT)
    command = [sys.executable, os.path.abspath(__file__), "--child", f"--model={args.model}", f"--seq={args.seq}",
               f"--batch={batch}", f"--steps={steps}", f"--recompute={int(recompute)}",
               f"--jit_compile={int(args.jit_compile)}"]
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode:
        raise SystemExit(f"measurement failed ({' '.join(command[2:])}):\n{result.stderr[-3000:]}")
    found = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"recompute={recompute} batch={batch}: activations {found['activation_bytes'] / GIB:.2f} GiB, peak "
          f"{found['peak_bytes'] / GIB:.2f} GiB, step {found['median_step_seconds']} s", file=sys.stderr, flush=True)
    return found


def largest_batch(args: argparse.Namespace, recompute: bool, at_batch: dict) -> dict:
    """The peak at ``--batch`` and at ``--batch // 2`` (one step), the line through them, the predicted largest
    batch under the cap, and that batch run once."""
    small = max(1, args.batch // 2)
    low = measure(args, recompute, small, steps=1)
    high = at_batch
    per_example = (high["peak_bytes"] - low["peak_bytes"]) / (args.batch - small)
    fixed = high["peak_bytes"] - per_example * args.batch
    predicted = int((args.cap_gib * GIB - fixed) // per_example) if per_example > 0 else None
    out = {"per_example_bytes": per_example, "fixed_bytes": fixed, "predicted_largest_batch": predicted,
           "measured_at": {str(small): low["peak_bytes"], str(args.batch): high["peak_bytes"]}}
    if predicted and args.check_largest and predicted <= args.check_limit:
        run = measure(args, recompute, predicted, steps=1)
        out["peak_bytes_at_predicted"] = run["peak_bytes"]
        out["fits_cap"] = run["peak_bytes"] <= args.cap_gib * GIB
    return out


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="albert_large_v2", help="a model config (albert_large_v2, albert_base_v2...)")
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=2, help="timed steps per process, after one untimed step")
    p.add_argument("--repeats", type=int, default=2, help="processes per mode, alternating (medians reported)")
    p.add_argument("--cap_gib", type=float, default=8.0, help="memory cap of the largest-batch estimate")
    p.add_argument("--check_largest", type=int, default=1, help="run the predicted largest batch once")
    p.add_argument("--check_limit", type=int, default=16, help="skip that run above this batch (it takes long)")
    p.add_argument("--jit_compile", type=int, default=0)
    p.add_argument("--output", default="")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--recompute", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return {}
    runs: dict[bool, list[dict]] = {False: [], True: []}
    for _ in range(args.repeats):
        for recompute in (False, True):
            runs[recompute].append(measure(args, recompute, args.batch, args.steps))

    def median(recompute, key):
        return statistics.median(r[key] for r in runs[recompute])

    without, with_ = median(False, "activation_bytes"), median(True, "activation_bytes")
    t0, t1 = median(False, "median_step_seconds"), median(True, "median_step_seconds")
    result = {
        "benchmark": "activation_memory",
        "activation_memory_ratio": without / with_ if with_ > 0 else None,  # None: too small to see
        "step_time_ratio": t1 / t0,
        "settings": {"model": args.model, "seq": args.seq, "batch": args.batch, "steps": args.steps,
                     "repeats": args.repeats, "dtype": "float32", "jit_compile": bool(args.jit_compile),
                     "optimizer": "AdamWeightDecay (official)", "malloc_mmap_threshold": MMAP_THRESHOLD},
        "without": {"activation_gib": without / GIB, "median_step_seconds": t0},
        "with": {"activation_gib": with_ / GIB, "median_step_seconds": t1},
        "weights_and_optimizer_gib": (runs[False][0]["weight_bytes"] + runs[False][0]["optimizer_state_bytes"]) / GIB,
        "runs": {"without": runs[False], "with": runs[True]},
        "largest_batch": {"cap_gib": args.cap_gib,
                          "without": largest_batch(args, False, runs[False][0]),
                          "with": largest_batch(args, True, runs[True][0])},
        "machine": machine_info(),
        "versions": versions(),
    }
    return emit(result, args.output)


if __name__ == "__main__":
    main()
