"""Train-step throughput of ALBERT-base: albert-tf vs keras-hub vs transformers (torch), one run.

One training step = forward (training mode) + loss ``mean(seq^2) + mean(pooled^2)`` + backward +
an Adam-style update, batch 8, sequence 128, float32, on ALBERT-base v2 dimensions built from a
config (no download). Each implementation lives in its own worker process (so one framework's
spinning thread pool cannot steal the cores of the next), and the driver interleaves them step by
step, round by round, so they see the same machine load; each reports the median of ``--steps``
steps after ``--warmup`` steps. A float32 2048x2048 matmul measured by the driver before and
after (workers idle) gives the machine's ceiling; achieved GFLOP/s is the analytic FLOP count of
the step divided by the median step time.

Prints one JSON object. Example: ``python benchmarks/encoder_throughput.py --steps 5``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from functools import partial

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks.common import StepWorkers, machine_info, run_main, versions  # noqa: E402

BATCH, SEQ = 8, 128
V, E, H, L, N, I = 30000, 128, 768, 12, 12, 3072


def step_gflop() -> float:
    """Analytic FLOPs of one train step (forward x3 for forward+backward)."""
    matmul_params_per_token = E * H + L * (4 * H * H + 2 * H * I)
    dense = 6 * matmul_params_per_token * BATCH * SEQ
    attention = 3 * L * 4 * SEQ * SEQ * H * BATCH  # QK^T and AV, forward + backward
    pooler = 6 * H * H * BATCH
    return (dense + attention + pooler) / 1e9


def batch_arrays(seed: int = 0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, V, (BATCH, SEQ)).astype("int32")
    mask = np.ones((BATCH, SEQ), "int32")
    seg = np.zeros((BATCH, SEQ), "int32")
    seg[:, SEQ // 2 :] = 1
    return ids, mask, seg


def matmul_ceiling(repeats: int = 10) -> float:
    a = tf.random.normal((2048, 2048))
    b = tf.random.normal((2048, 2048))
    f = tf.function(lambda x, y: tf.matmul(x, y))
    for _ in range(3):
        f(a, b).numpy()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f(a, b).numpy()
        times.append(time.perf_counter() - t)
    return 2 * 2048**3 / statistics.median(times) / 1e9


def keras_train_step(model, inputs: dict, jit_compile: bool):
    """The timed step for a Keras backbone: forward, the shared loss, backward, AdamW update."""
    import keras

    opt = keras.optimizers.AdamW(1e-5)

    @tf.function(jit_compile=jit_compile)
    def step():
        with tf.GradientTape() as tape:
            out = model(inputs, training=True)
            loss = tf.reduce_mean(tf.square(out["sequence_output"])) + tf.reduce_mean(tf.square(out["pooled_output"]))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return lambda: float(step())


def albert_tf_step(jit_compile: bool):
    import keras

    from albert_tf.config import AlbertConfig
    from albert_tf.modeling import AlbertEncoder

    keras.utils.set_random_seed(0)
    model = AlbertEncoder(AlbertConfig.from_preset("albert_base_v2"))
    ids, mask, seg = (tf.constant(x) for x in batch_arrays())
    return keras_train_step(model, {"input_ids": ids, "input_mask": mask, "segment_ids": seg}, jit_compile)


def keras_hub_step(jit_compile: bool):
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    model = keras_hub.models.AlbertBackbone(
        vocabulary_size=V,
        num_layers=L,
        num_heads=N,
        num_groups=1,
        num_inner_repetitions=1,
        embedding_dim=E,
        hidden_dim=H,
        intermediate_dim=I,
        dropout=0.0,
        max_sequence_length=512,
        num_segments=2,
    )
    ids, mask, seg = (tf.constant(x) for x in batch_arrays())
    return keras_train_step(model, {"token_ids": ids, "padding_mask": mask, "segment_ids": seg}, jit_compile)


def transformers_step():
    import torch
    import transformers

    torch.set_num_threads(2)
    torch.manual_seed(0)
    cfg = transformers.AlbertConfig(
        vocab_size=V,
        embedding_size=E,
        hidden_size=H,
        num_hidden_layers=L,
        num_attention_heads=N,
        intermediate_size=I,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=512,
    )
    model = transformers.AlbertModel(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids, mask, seg = (torch.tensor(x, dtype=torch.long) for x in batch_arrays())

    def step():
        opt.zero_grad(set_to_none=True)
        out = model(input_ids=ids, attention_mask=mask, token_type_ids=seg)
        loss = out.last_hidden_state.pow(2).mean() + out.pooler_output.pow(2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    return step


FACTORIES = {
    "albert_tf": partial(albert_tf_step, False),
    "albert_tf_xla": partial(albert_tf_step, True),
    "keras_hub": partial(keras_hub_step, False),
    "keras_hub_xla": partial(keras_hub_step, True),
    "transformers_torch": transformers_step,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per implementation (median reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps after the first (trace) step")
    parser.add_argument("--only", default="", help="comma list: albert_tf,albert_tf_xla,keras_hub,keras_hub_xla,torch")
    args = parser.parse_args()

    names = list(FACTORIES)
    if args.only:
        wanted = set(args.only.split(","))
        names = [k for k in names if k in wanted or k.replace("transformers_", "") in wanted]

    with StepWorkers({name: FACTORIES[name] for name in names}) as workers:
        first = workers.first_steps(args.warmup)
        time.sleep(1.0)
        ceiling_before = matmul_ceiling()
        times = workers.rounds(args.steps)
        time.sleep(1.0)
        ceiling_after = matmul_ceiling()
        foreign = workers.foreign
    ceiling = statistics.median([ceiling_before, ceiling_after])
    gflop = step_gflop()
    results = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        results[name] = {
            "median_step_s": round(med, 4),
            "examples_per_s": round(BATCH / med, 3),
            "achieved_gflops": round(gflop / med, 1),
            "ratio_to_matmul_ceiling": round(gflop / med / ceiling, 3),
            "first_step_s": round(first[name], 2),
            "step_times_s": [round(t, 3) for t in ts],
        }
    peers = [results[k]["examples_per_s"] for k in results if not k.startswith("albert_tf")]
    ours = [results[k]["examples_per_s"] for k in results if k.startswith("albert_tf")]
    summary = {
        "benchmark": "albert_base_train_step",
        "batch": BATCH,
        "seq_len": SEQ,
        "dtype": "float32",
        "train_gflop_per_step": round(gflop, 1),
        "matmul_ceiling_gflops": round(ceiling, 1),
        "matmul_ceiling_before_after": [round(ceiling_before, 1), round(ceiling_after, 1)],
        "foreign_cpu_share_per_round": foreign,
        "machine": machine_info(),
        "versions": versions(extra=("keras-hub",)),
        "results": results,
    }
    if peers and ours:
        summary["best_albert_tf_over_best_peer"] = round(max(ours) / max(peers), 3)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    run_main(main)
