"""Train-step throughput of ALBERT-base: albert-tf vs keras-hub vs transformers (torch), one run.

One training step = forward (training mode) + loss ``mean(seq^2) + mean(pooled^2)`` + backward +
an Adam-style update, batch 8, sequence 128, float32, on ALBERT-base v2 dimensions built from a
config (no download). Each implementation lives in its own worker process (so one framework's
spinning thread pool cannot steal the cores of the next), and the driver interleaves them step by
step, round by round, so they see the same machine load; each reports the median of ``--steps``
steps after ``--warmup`` steps. A float32 2048x2048 matmul (``--ceiling_size``) measured by the driver
before and after (workers idle) gives the machine's ceiling; achieved GFLOP/s is the analytic FLOP count of
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

# ALBERT-base v2 (albert_tf/configs/albert_base_v2.json), batch 8 x 128; --smoke: a 2-layer H 32 model, 2 x 16.
BASE = {"batch": 8, "seq": 128, "V": 30000, "E": 128, "H": 768, "L": 12, "N": 12, "I": 3072}
SMOKE = {"batch": 2, "seq": 16, "V": 1000, "E": 16, "H": 32, "L": 2, "N": 2, "I": 64}


def step_gflop(d: dict) -> float:
    """Analytic FLOPs of one train step (forward x3 for forward+backward)."""
    E, H, L, I, B, S = d["E"], d["H"], d["L"], d["I"], d["batch"], d["seq"]  # noqa: E741
    matmul_params_per_token = E * H + L * (4 * H * H + 2 * H * I)
    dense = 6 * matmul_params_per_token * B * S
    attention = 3 * L * 4 * S * S * H * B  # QK^T and AV, forward + backward
    pooler = 6 * H * H * B
    return (dense + attention + pooler) / 1e9


def batch_arrays(d: dict, seed: int = 0):
    rng = np.random.default_rng(seed)
    B, S = d["batch"], d["seq"]
    ids = rng.integers(5, d["V"], (B, S)).astype("int32")
    mask = np.ones((B, S), "int32")
    seg = np.zeros((B, S), "int32")
    seg[:, S // 2 :] = 1
    return ids, mask, seg


def matmul_ceiling(size: int = 2048, repeats: int = 10) -> float:
    """Float32 GFLOP/s of a ``size`` x ``size`` matmul in a tf.function (median of ``repeats`` after 3 untimed)."""
    a = tf.random.normal((size, size))
    b = tf.random.normal((size, size))
    f = tf.function(lambda x, y: tf.matmul(x, y))
    for _ in range(3):
        f(a, b).numpy()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f(a, b).numpy()
        times.append(time.perf_counter() - t)
    return 2 * size**3 / statistics.median(times) / 1e9


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


def albert_tf_step(d: dict, jit_compile: bool):
    import keras

    from albert_tf.config import AlbertConfig
    from albert_tf.modeling import AlbertEncoder

    keras.utils.set_random_seed(0)
    config = AlbertConfig.from_name("albert_base_v2").replace(
        vocab_size=d["V"], embedding_size=d["E"], hidden_size=d["H"], num_hidden_layers=d["L"],
        num_attention_heads=d["N"], intermediate_size=d["I"])
    model = AlbertEncoder(config)
    ids, mask, seg = (tf.constant(x) for x in batch_arrays(d))
    return keras_train_step(model, {"input_ids": ids, "input_mask": mask, "segment_ids": seg}, jit_compile)


def keras_hub_step(d: dict, jit_compile: bool):
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    model = keras_hub.models.AlbertBackbone(
        vocabulary_size=d["V"],
        num_layers=d["L"],
        num_heads=d["N"],
        num_groups=1,
        num_inner_repetitions=1,
        embedding_dim=d["E"],
        hidden_dim=d["H"],
        intermediate_dim=d["I"],
        dropout=0.0,
        max_sequence_length=512,
        num_segments=2,
    )
    ids, mask, seg = (tf.constant(x) for x in batch_arrays(d))
    return keras_train_step(model, {"token_ids": ids, "padding_mask": mask, "segment_ids": seg}, jit_compile)


def transformers_step(d: dict):
    import torch
    import transformers

    torch.set_num_threads(2)
    torch.manual_seed(0)
    cfg = transformers.AlbertConfig(
        vocab_size=d["V"],
        embedding_size=d["E"],
        hidden_size=d["H"],
        num_hidden_layers=d["L"],
        num_attention_heads=d["N"],
        intermediate_size=d["I"],
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=512,
    )
    model = transformers.AlbertModel(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids, mask, seg = (torch.tensor(x, dtype=torch.long) for x in batch_arrays(d))

    def step():
        opt.zero_grad(set_to_none=True)
        out = model(input_ids=ids, attention_mask=mask, token_type_ids=seg)
        loss = out.last_hidden_state.pow(2).mean() + out.pooler_output.pow(2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    return step


def factories(d: dict) -> dict:
    """Each implementation's ``build() -> step`` at the dimensions ``d``."""
    return {
        "albert_tf": partial(albert_tf_step, d, False),
        "albert_tf_xla": partial(albert_tf_step, d, True),
        "keras_hub": partial(keras_hub_step, d, False),
        "keras_hub_xla": partial(keras_hub_step, d, True),
        "transformers_torch": partial(transformers_step, d),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per implementation (median reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps after the first (trace) step")
    parser.add_argument("--only", default="", help="comma list: albert_tf,albert_tf_xla,keras_hub,keras_hub_xla,torch")
    parser.add_argument("--smoke", action="store_true", help="a 2-layer H 32 model, batch 2 x 16: checks the script "
                        "end to end")
    parser.add_argument("--ceiling_size", type=int, default=2048,
                        help="side of the square float32 matmul that measures the machine's ceiling (a small one, "
                             "e.g. 128, when only checking the script: the ratios to it then mean nothing)")
    args = parser.parse_args()
    if args.ceiling_size < 1:
        parser.error("--ceiling_size must be >= 1")

    d = SMOKE if args.smoke else BASE
    builders = factories(d)
    names = list(builders)
    if args.only:
        wanted = set(args.only.split(","))
        names = [k for k in names if k in wanted or k.replace("transformers_", "") in wanted]

    with StepWorkers({name: builders[name] for name in names}) as workers:
        first = workers.first_steps(args.warmup)
        time.sleep(1.0)
        ceiling_before = matmul_ceiling(args.ceiling_size)
        times = workers.rounds(args.steps)
        time.sleep(1.0)
        ceiling_after = matmul_ceiling(args.ceiling_size)
        foreign = workers.foreign
    ceiling = statistics.median([ceiling_before, ceiling_after])
    gflop = step_gflop(d)
    results = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        results[name] = {
            "median_step_s": round(med, 4),
            "examples_per_s": round(d["batch"] / med, 3),
            "achieved_gflops": round(gflop / med, 1),
            "ratio_to_matmul_ceiling": round(gflop / med / ceiling, 3),
            "first_step_s": round(first[name], 2),
            "step_times_s": [round(t, 3) for t in ts],
        }
    peers = [results[k]["examples_per_s"] for k in results if not k.startswith("albert_tf")]
    ours = [results[k]["examples_per_s"] for k in results if k.startswith("albert_tf")]
    summary = {
        "benchmark": "smoke_train_step" if args.smoke else "albert_base_train_step",
        "batch": d["batch"],
        "seq_len": d["seq"],
        "dtype": "float32",
        "train_gflop_per_step": round(gflop, 1),
        "matmul_ceiling_gflops": round(ceiling, 1),
        "matmul_ceiling_size": args.ceiling_size,
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
