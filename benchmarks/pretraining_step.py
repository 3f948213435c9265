"""One ALBERT-base pretraining step (MLM at 20 masked positions + SOP): albert-tf vs transformers vs keras-hub.

The step: forward in training mode, the pretraining loss (MLM cross-entropy over the masked positions, weighted
by ``masked_lm_weights`` as the official, plus the sentence-order cross-entropy on the pooled output), backward,
and an **AdamW** update (``keras.optimizers.AdamW`` for the two Keras models, ``torch.optim.AdamW`` for
transformers; lr 1e-5, weight decay 0.01); batch 8, sequence 128, 20 masked positions per sequence, float32,
dropout 0 (ALBERT v2), ALBERT-base v2 dimensions built from configs with random weights (no download).

Implementations (each in its own worker process; the driver interleaves them step by step, round by round, so
all see the same machine load; each reports the median of ``--steps`` steps after ``--warmup`` steps):

* ``albert_tf``: ``AlbertPretrainer`` as it pretrains by default: the last transformer block computed only at
  [CLS] and the masked positions (``last_layer_subset=True``; exact, tested in tests/test_last_layer_subset.py);
* ``albert_tf_full_last_layer``: the same with ``last_layer_subset=False`` (the last layer at every position):
  ``last_layer_subset_gain`` = its step time / ``albert_tf``'s, the trick's own gain;
* ``albert_tf_xla`` (and ``albert_tf_full_last_layer_xla`` with ``--xla_full``): the step under
  ``tf.function(jit_compile=True)``;
* ``transformers_torch``: ``transformers.AlbertForPreTraining`` (labels -100 off the masked positions: its MLM
  head computes logits at every position, as the library does), ``torch.set_num_threads(--torch_threads)``;
* ``keras_hub``: ``keras_hub.models.AlbertMaskedLM`` (its head gathers the masked positions) with a Dense(2)
  sentence-order head on the backbone's pooled output (keras-hub has no SOP head); ``keras_hub_xla`` with
  ``--xla_peers``.

``--bf16`` adds bfloat16 runs of the same step: ``albert_tf_bf16`` and ``albert_tf_bf16_xla`` (the
``mixed_bfloat16`` Keras policy that ``--mixed_precision=mixed_bfloat16`` sets: bfloat16 matmuls, float32 variables,
LayerNorm/softmax/losses in float32) and ``transformers_torch_bf16_autocast`` (the forward under
``torch.autocast("cpu", dtype=torch.bfloat16)``, backward and AdamW outside it, as torch recommends) and
``keras_hub_bf16`` (keras-hub under the same ``mixed_bfloat16`` policy); the ``bf16`` block of the JSON has each
framework's bfloat16 speed-up over its float32 step, ``albert_tf_bf16_over_torch_autocast`` and
``albert_tf_bf16_over_best_bf16_peer``. bfloat16 pays off only on CPUs with bfloat16 units (``avx512_bf16``,
``amx_bf16`` in the JSON's ``machine.cpu_flags``).

``albert_tf_over_best_peer`` = the best float32 albert-tf examples/s over the best float32 peer's (target >= 1.15).
The JSON also carries the CPU model and flags from /proc/cpuinfo, library versions and the analytic GFLOP of one step.

    python benchmarks/pretraining_step.py --steps 7            # the measurement (several minutes on 2 cores)
    python benchmarks/pretraining_step.py --smoke              # a tiny model, end to end in about a minute
    python benchmarks/pretraining_step.py --xla_peers --bf16   # + keras-hub under XLA, + bfloat16 (~15 min)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from functools import partial

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import StepWorkers, machine_info, run_main, versions  # noqa: E402

# ALBERT-base v2 and the step's shape; --smoke replaces them by a tiny model.
BASE = {"vocab": 30000, "embedding": 128, "hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072,
        "batch": 8, "seq": 128, "predictions": 20}
SMOKE = {"vocab": 1000, "embedding": 32, "hidden": 64, "layers": 2, "heads": 2, "intermediate": 128,
         "batch": 2, "seq": 32, "predictions": 5}
LEARNING_RATE, WEIGHT_DECAY = 1e-5, 0.01


def step_gflop(d: dict, last_layer_rows: int | None = None) -> float:
    """Analytic FLOPs of one step (x3 for forward + backward): encoder, MLM head at the masked rows, SOP.

    ``last_layer_rows`` (per sequence): the rows at which the last layer's queries, attention output and FFN run
    (1 + predictions for the subset path); keys/values still cover every row.
    """
    b, s, h, i, e, v, p = d["batch"], d["seq"], d["hidden"], d["intermediate"], d["embedding"], d["vocab"], \
        d["predictions"]
    rows = s if last_layer_rows is None else last_layer_rows
    per_token_layer = 4 * h * h + 2 * h * i  # QKV + output projection + FFN
    layers = (d["layers"] - 1) * s * per_token_layer + rows * (2 * h * h + 2 * h * i) + s * 2 * h * h
    attention = (d["layers"] - 1) * 2 * s * s * h + 2 * rows * s * h
    mlm = p * (h * e + e * v)
    forward = 2 * b * (s * e * h + layers + attention + mlm + h * h + 2 * h)
    return 3 * forward / 1e9


def arrays(d: dict, seed: int = 0) -> dict:
    """A random batch: ids, full mask, two segments, ``predictions`` distinct masked positions per row."""
    import numpy as np

    rng = np.random.default_rng(seed)
    b, s, p = d["batch"], d["seq"], d["predictions"]
    ids = rng.integers(5, d["vocab"], (b, s)).astype("int32")
    seg = np.zeros((b, s), "int32")
    seg[:, s // 2:] = 1
    positions = np.sort(np.stack([rng.choice(np.arange(1, s - 1), p, replace=False) for _ in range(b)]), 1)
    return {
        "input_ids": ids,
        "input_mask": np.ones((b, s), "int32"),
        "segment_ids": seg,
        "masked_lm_positions": positions.astype("int32"),
        "masked_lm_ids": rng.integers(5, d["vocab"], (b, p)).astype("int32"),
        "masked_lm_weights": np.ones((b, p), "float32"),
        "next_sentence_labels": rng.integers(0, 2, (b, 1)).astype("int32"),
    }


def keras_step(forward, variables, jit_compile: bool):
    """The timed step for a Keras model: ``forward() -> loss`` under a tape, AdamW update."""
    import keras
    import tensorflow as tf

    opt = keras.optimizers.AdamW(LEARNING_RATE, weight_decay=WEIGHT_DECAY)

    @tf.function(jit_compile=jit_compile)
    def step():
        with tf.GradientTape() as tape:
            loss = forward()
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss

    return lambda: float(step())


def albert_tf_step(d: dict, last_layer_subset: bool, jit_compile: bool, policy: str = "float32"):
    import keras
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.modeling import AlbertPretrainer
    from albert_tf.modeling.losses import pretraining_losses

    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(policy)  # this worker's process only
    config = AlbertConfig(vocab_size=d["vocab"], embedding_size=d["embedding"], hidden_size=d["hidden"],
                          num_hidden_layers=d["layers"], num_attention_heads=d["heads"],
                          intermediate_size=d["intermediate"], max_position_embeddings=512,
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = AlbertPretrainer(config, last_layer_subset=last_layer_subset)
    feats = {k: tf.constant(v) for k, v in arrays(d).items()}
    inputs = {k: feats[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")}

    def forward():
        return pretraining_losses(model(inputs, training=True), feats)["total_loss"]

    return keras_step(forward, model.trainable_variables, jit_compile)


def keras_hub_step(d: dict, jit_compile: bool, policy: str = "float32"):
    import keras
    import keras_hub
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(policy)  # this worker's process only
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=d["vocab"], num_layers=d["layers"], num_heads=d["heads"], num_groups=1,
        num_inner_repetitions=1, embedding_dim=d["embedding"], hidden_dim=d["hidden"],
        intermediate_dim=d["intermediate"], dropout=0.0, max_sequence_length=512, num_segments=2,
    )
    masked_lm = keras_hub.models.AlbertMaskedLM(backbone)
    sop = keras.layers.Dense(2, name="sentence_order")
    sop.build((None, d["hidden"]))
    feats = {k: tf.constant(v) for k, v in arrays(d).items()}
    inputs = {"token_ids": feats["input_ids"], "padding_mask": feats["input_mask"],
              "segment_ids": feats["segment_ids"]}
    weights = feats["masked_lm_weights"]
    variables = masked_lm.trainable_variables + sop.trainable_variables

    def forward():
        out = backbone(inputs, training=True)  # one encoder pass feeds both heads
        logits = masked_lm.masked_lm_head(out["sequence_output"], feats["masked_lm_positions"])
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(feats["masked_lm_ids"], tf.cast(logits, tf.float32))
        mlm = tf.reduce_sum(weights * nll) / (tf.reduce_sum(weights) + 1e-5)
        sop_nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
            tf.reshape(feats["next_sentence_labels"], [-1]), tf.cast(sop(out["pooled_output"]), tf.float32))
        return mlm + tf.reduce_mean(sop_nll)

    return keras_step(forward, variables, jit_compile)


def transformers_step(d: dict, threads: int, autocast_bf16: bool = False):
    import contextlib

    import torch
    import transformers

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cfg = transformers.AlbertConfig(
        vocab_size=d["vocab"], embedding_size=d["embedding"], hidden_size=d["hidden"],
        num_hidden_layers=d["layers"], num_attention_heads=d["heads"], intermediate_size=d["intermediate"],
        hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.0, max_position_embeddings=512,
    )
    model = transformers.AlbertForPreTraining(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    a = arrays(d)
    ids, mask, seg = (torch.tensor(a[k], dtype=torch.long) for k in ("input_ids", "input_mask", "segment_ids"))
    labels = torch.full(ids.shape, -100, dtype=torch.long)  # -100: not a masked position
    labels.scatter_(1, torch.tensor(a["masked_lm_positions"], dtype=torch.long),
                    torch.tensor(a["masked_lm_ids"], dtype=torch.long))
    order = torch.tensor(a["next_sentence_labels"].reshape(-1), dtype=torch.long)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16) if autocast_bf16 else contextlib.nullcontext():
            out = model(input_ids=ids, attention_mask=mask, token_type_ids=seg, labels=labels,
                        sentence_order_label=order)
        out.loss.backward()
        opt.step()
        return out.loss.item()

    return step


def factories(d: dict, args: argparse.Namespace) -> dict:
    """name -> a picklable ``build() -> step`` (each runs in its own spawned worker)."""
    out = {
        "albert_tf": partial(albert_tf_step, d, True, False),
        "albert_tf_full_last_layer": partial(albert_tf_step, d, False, False),
        "albert_tf_xla": partial(albert_tf_step, d, True, True),
        "keras_hub": partial(keras_hub_step, d, False),
        "transformers_torch": partial(transformers_step, d, args.torch_threads),
    }
    if args.xla_full:
        out["albert_tf_full_last_layer_xla"] = partial(albert_tf_step, d, False, True)
    if args.xla_peers:
        out["keras_hub_xla"] = partial(keras_hub_step, d, True)
    if args.bf16:
        out["albert_tf_bf16"] = partial(albert_tf_step, d, True, False, "mixed_bfloat16")
        out["albert_tf_bf16_xla"] = partial(albert_tf_step, d, True, True, "mixed_bfloat16")
        out["transformers_torch_bf16_autocast"] = partial(transformers_step, d, args.torch_threads, True)
        out["keras_hub_bf16"] = partial(keras_hub_step, d, False, "mixed_bfloat16")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=7, help="timed steps per implementation (median reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps after the first (trace) step")
    parser.add_argument("--only", default="", help="comma list of implementation names (default: all)")
    parser.add_argument("--torch_threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--xla_full", action="store_true", help="also albert_tf_full_last_layer_xla")
    parser.add_argument("--xla_peers", action="store_true", help="also keras_hub_xla")
    parser.add_argument("--bf16", action="store_true", help="also albert_tf_bf16, albert_tf_bf16_xla, keras_hub_bf16 "
                        "(mixed_bfloat16) and transformers_torch_bf16_autocast (torch.autocast bfloat16)")
    parser.add_argument("--smoke", action="store_true", help="a tiny model and batch: checks the script end to end")
    args = parser.parse_args()

    d = dict(SMOKE if args.smoke else BASE)
    builders = factories(d, args)
    if args.only:
        wanted = set(args.only.split(","))
        builders = {n: b for n, b in builders.items() if n in wanted}

    with StepWorkers(builders) as workers:
        first = workers.first_steps(args.warmup)
        times = workers.rounds(args.steps)
        foreign = workers.foreign

    full_gflop = step_gflop(d)
    subset_gflop = step_gflop(d, last_layer_rows=1 + d["predictions"])
    results = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        gflop = full_gflop if "full_last_layer" in name or not name.startswith("albert_tf") else subset_gflop
        results[name] = {
            "median_step_s": round(med, 4),
            "min_step_s": round(min(ts), 4),  # the least disturbed step, for a loaded machine
            "examples_per_s": round(d["batch"] / med, 3),
            "achieved_gflops": round(gflop / med, 1),
            "first_step_s": round(first[name], 2),
            "step_times_s": [round(t, 4) for t in ts],
        }
    summary = {
        "benchmark": "albert_base_pretraining_step" if not args.smoke else "smoke_pretraining_step",
        "shape": d,
        "dtype": "float32 (the *_bf16* implementations: bfloat16 compute, float32 variables)",
        "optimizer": f"AdamW (lr {LEARNING_RATE}, weight decay {WEIGHT_DECAY}): keras.optimizers.AdamW / "
                     "torch.optim.AdamW",
        "loss": "MLM (weighted mean over the masked positions) + SOP",
        "gflop_per_step": {"full_last_layer": round(full_gflop, 2), "last_layer_subset": round(subset_gflop, 2)},
        "steps": args.steps,
        "warmup": args.warmup,
        "torch_threads": args.torch_threads,
        "foreign_cpu_share_per_round": foreign,
        "machine": machine_info(),
        "versions": versions(extra=("keras-hub",)),
        "results": results,
    }
    fp32 = {k: v["examples_per_s"] for k, v in results.items() if "bf16" not in k}
    ours = {k: v for k, v in fp32.items() if k.startswith("albert_tf")}
    peers = {k: v for k, v in fp32.items() if not k.startswith("albert_tf")}
    if ours and peers:
        best_ours, best_peer = max(ours, key=ours.get), max(peers, key=peers.get)
        summary["albert_tf_over_best_peer"] = round(ours[best_ours] / peers[best_peer], 3)
        summary["best_albert_tf"], summary["best_peer"] = best_ours, best_peer
        summary["target_albert_tf_over_best_peer"] = 1.15
    for plain in ("albert_tf", "albert_tf_xla"):
        full = plain.replace("albert_tf", "albert_tf_full_last_layer")
        if plain in results and full in results:
            key = "last_layer_subset_gain" + ("_xla" if plain.endswith("xla") else "")
            summary[key] = round(results[full]["median_step_s"] / results[plain]["median_step_s"], 3)
            summary[key + "_min_steps"] = round(results[full]["min_step_s"] / results[plain]["min_step_s"], 3)
    if args.bf16:
        summary["bf16"] = bf16_summary(results)
    print(json.dumps(summary, indent=2))


def bf16_summary(results: dict) -> dict:
    """bfloat16 against float32 in each framework (step-time ratios: > 1 = bf16 faster), and albert-tf's best
    bfloat16 against torch autocast."""
    def ratio(slow: str, fast: str) -> float | None:
        if slow in results and fast in results:
            return round(results[slow]["median_step_s"] / results[fast]["median_step_s"], 3)
        return None

    out = {
        "albert_tf_bf16_speedup": ratio("albert_tf", "albert_tf_bf16"),
        "albert_tf_bf16_xla_speedup_over_xla": ratio("albert_tf_xla", "albert_tf_bf16_xla"),
        "torch_autocast_speedup": ratio("transformers_torch", "transformers_torch_bf16_autocast"),
    }
    ours = {k: results[k]["examples_per_s"] for k in ("albert_tf_bf16", "albert_tf_bf16_xla") if k in results}
    if not ours:
        return out
    best = max(ours, key=ours.get)
    torch_bf16 = results.get("transformers_torch_bf16_autocast")
    if torch_bf16:
        out["best_albert_tf_bf16"] = best
        out["albert_tf_bf16_over_torch_autocast"] = round(ours[best] / torch_bf16["examples_per_s"], 3)
    peers = {k: results[k]["examples_per_s"] for k in ("transformers_torch_bf16_autocast", "keras_hub_bf16")
             if k in results}
    if peers:
        peer = max(peers, key=peers.get)
        out["best_bf16_peer"] = peer
        out["albert_tf_bf16_over_best_bf16_peer"] = round(ours[best] / peers[peer], 3)
    return out


if __name__ == "__main__":
    run_main(main)
