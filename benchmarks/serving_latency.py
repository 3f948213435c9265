"""Serving latency of ALBERT-base, raw text in, answer out: albert-tf SavedModel vs transformers, one run.

One request = one MRPC-like sentence pair as Python strings -> the label string, batch 1, sequence 128 (the
pair is long enough that the packed input fills all 128 positions on both sides, and is cut only from the
second sentence, where the official and the Hugging Face pair truncation agree):

* ``albert_tf``: ``tf.saved_model.load(dir).signatures["serving_default"](text_a=..., text_b=...)["label"]`` on
  the SavedModel that ``albert_tf.tasks.glue.export.export_classifier`` writes (tokenization in the graph); the
  stock export, loaded and called the stock way (``import tensorflow_text`` first);
* ``transformers``: ``AutoTokenizer`` + ``AlbertForSequenceClassification`` (torch, ``set_num_threads(2)``,
  ``inference_mode``) on the directory that ``albert_tf.checkpoints.huggingface.save_huggingface`` writes from
  the *same* model (identical weights and SentencePiece model), argmax -> label.

The model is a randomly initialised (``--seed``) ``AlbertClassifier`` from the ``albert_base_v2`` preset with 2
labels (latency does not depend on the weights' values), with the real ALBERT SentencePiece model
(``../shared/data/spm/30k-clean.model``). A build process writes both exports into a temporary directory
(removed at the end); each implementation then lives in its own worker process (so one framework's spinning
thread pool cannot steal the cores of the next), and the driver interleaves one request per worker, round by
round, ``--pause`` seconds apart, so they all see the same machine load; each side's latency is the median of
``--runs`` requests after ``--warmup`` untimed ones. This machine is shared: a round counts only when processes
outside the benchmark used less than ``--max_foreign`` of the CPUs during it (from /proc; under contention torch's
OpenMP pool slows down ~10x and TensorFlow's ~1.6x, which would fake any ratio); rounds go on until ``--runs``
were quiet, or every round counts and ``rounds.disturbed`` says so. Before timing, the driver checks that both
sides computed on the same token ids and reports the largest probability difference (the same model).

``profile``: each side's time split into tokenization alone (albert-tf: the same preprocessor exported on its own
by ``export_preprocessor``; transformers: the tokenizer call) and model alone on precomputed ids (albert-tf: the
export's ``serve_token_ids`` signature; transformers: the forward + argmax), also interleaved; an op-type
breakdown of one request (TF1 session full trace of ``serving_default``; ``torch.profiler``) with the positions
each dense matmul computed (``albert_tf.export.work.dense_work``; the input shape of each ``nn.Linear`` call); the
analytic GFLOP of the whole forward with each side's achieved GFLOP/s (albert-tf's last layer computes only
``[CLS]``, so its figure counts work it skips); and, as a floor, the same chain of dense matmuls run bare in each
framework.

``variants`` (the headline stays the stock path above), each in its own worker in the same rounds: the TF1
session loader TF Serving uses; ``inter_op=1``; oneDNN off; the stock export of the same weights in
``mixed_bfloat16``; the package's opt-in ``export_classifier(jit_compile=True)`` (``--export_jit_compile``: the
forward under XLA), also in bfloat16; and ``bucket_lengths=None`` (every request padded to 128). Every variant is
an export the package writes with its public options: the benchmark patches no layer.

Prints one JSON object with a top-level ``albert_tf_latency_over_transformers`` (median albert-tf / median
transformers). Example: ``python benchmarks/serving_latency.py --runs 30``. ``--smoke``: the same command on a
2-layer H 64 cut of the preset's config (every variant, the profile and the traces; the op breakdown then counts
``128x128`` / ``1x128`` FFN matmuls), which checks the script end to end and measures nothing:
``python benchmarks/serving_latency.py --smoke --runs 1 --warmup 0 --profile_runs 1``.
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime
import functools
import json
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import (  # noqa: E402
    ForeignLoad,
    WorkerError,
    Workers,
    machine_info,
    run_main,
    shared_data_dir,
    versions,
)

SEQ = 128
LABELS = ["0", "1"]
PRESET = "albert_base_v2"
# The model's dimensions: ALBERT-base v2 (albert_tf/configs/albert_base_v2.json); --smoke: the preset's config with
# the other scripts' smoke sizes (2 layers, H 64), which checks the script end to end and measures nothing.
BASE = {"E": 128, "H": 768, "L": 12, "N": 12, "I": 3072}
SMOKE = {"E": 16, "H": 64, "L": 2, "N": 2, "I": 128}
TORCH_THREADS = 2
TARGET_RATIO = 0.8
TORCH_MATMUL_OPS = {"aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
                    "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::mkldnn_linear"}
# Used where ../shared/data/glue/MRPC is absent (a user's fresh clone): plain English, long enough to fill 128.
FALLBACK_TEXT_A = "The company said on Tuesday that its quarterly profit rose by nearly a third."
FALLBACK_TEXT_B = (
    "Quarterly earnings at the firm climbed almost thirty percent, the company reported on Tuesday, as sales of "
    "its software and services grew faster than analysts had expected. The chief executive told investors that "
    "demand from large customers remained strong, although he warned that the second half of the year could be "
    "harder because of rising costs and a weaker currency. Shares in the company rose more than four percent in "
    "early trading before falling back later in the day. Analysts said the results were better than they had "
    "feared, but several of them cut their forecasts for next year after the company declined to repeat its "
    "earlier guidance on margins and hiring."
)


# ----------------------------------------------------------------------------------------------- inputs

def benchmark_pair(mrpc_file: str, short: bool = False) -> tuple[str, str, str]:
    """``(text_a, text_b, source)``: one MRPC sentence as ``text_a`` and the second sentences of the following
    rows joined as ``text_b`` (well over 128 tokens together); built-in English text where the file is absent.
    ``short``: the first MRPC pair itself (the length of a real request, about 50 tokens packed)."""
    path = pathlib.Path(mrpc_file)
    if not path.is_file():
        if short:
            return FALLBACK_TEXT_A, FALLBACK_TEXT_B.split(". ")[0] + ".", "built-in English text (MRPC file absent)"
        return FALLBACK_TEXT_A, FALLBACK_TEXT_B, "built-in English text (MRPC file absent)"
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = [r for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) if len(r) >= 5][1:]
    text_a = rows[0][3]
    if short:
        return text_a, rows[0][4], f"{path.name}: row 1 (#1 String, #2 String)"
    text_b = " ".join(r[4] for r in rows[1:9])
    return text_a, text_b, f"{path.name}: #1 String of row 1 / #2 Strings of rows 2-9, joined"


def config_overrides(dims: dict) -> dict:
    """The ``AlbertConfig`` fields that turn the preset's config into ``dims`` (none for ALBERT-base itself)."""
    if dims == BASE:
        return {}
    return {"embedding_size": dims["E"], "hidden_size": dims["H"], "num_hidden_layers": dims["L"],
            "num_attention_heads": dims["N"], "intermediate_size": dims["I"]}


def chain_shapes(dims: dict) -> tuple:
    """The forward's dense kernels: embedding projection, QKV, attention output, FFN in, FFN out."""
    E, H, I = dims["E"], dims["H"], dims["I"]
    return ((E, H), (H, 3 * H), (H, H), (H, I), (I, H))


def _dense_flop(dims: dict) -> int:
    """FLOPs of the forward's dense matmuls at batch 1, sequence SEQ (the matmul chain's)."""
    E, H, L, I = dims["E"], dims["H"], dims["L"], dims["I"]
    return 2 * SEQ * (E * H + L * (4 * H * H + 2 * H * I))


def forward_gflop(dims: dict) -> float:
    """Analytic FLOPs of one forward at batch 1, sequence SEQ (dense layers + attention scores + pooler/head)."""
    H, L = dims["H"], dims["L"]
    attention = L * 2 * 2 * SEQ * SEQ * H
    return (_dense_flop(dims) + attention + 2 * H * H + 2 * H * len(LABELS)) / 1e9


# ----------------------------------------------------------------------------------------------- build

def build_exports(work_dir: str, spm_model_file: str, seed: int, variants: list[str], dims: dict) -> dict:
    """One ``AlbertClassifier`` (fixed seed) -> the stock SavedModel, the preprocessor SavedModel, the Hugging Face
    directory and the other exports the chosen variants need. Runs in its own process."""
    import keras
    import numpy as np

    from albert_tf.checkpoints.huggingface import save_huggingface
    from albert_tf.export.encoder import export_preprocessor
    from albert_tf.tasks.glue.export import export_classifier
    from albert_tf.tasks.glue.model import AlbertClassifier

    def build(dtype=None):
        keras.utils.set_random_seed(seed)
        model = AlbertClassifier.from_preset(PRESET, num_labels=len(LABELS), dtype=dtype, load_weights=False,
                                             **config_overrides(dims))
        dummy = np.zeros((1, 2), np.int32)
        model({k: dummy for k in ("input_ids", "input_mask", "segment_ids")}, training=False)
        return model

    t0 = time.perf_counter()
    model = build()
    paths = {k: os.path.join(work_dir, k) for k in ("albert_tf", "preprocessor", "huggingface")}
    export_classifier(model, paths["albert_tf"], labels=LABELS, text_pair=True, spm_model_file=spm_model_file,
                      max_seq_length=SEQ)
    export_preprocessor(paths["preprocessor"], spm_model_file=spm_model_file, max_seq_length=SEQ)
    save_huggingface(model, paths["huggingface"], spm_model_file=spm_model_file)
    copies: dict = {}

    def copy(kind: str):
        """The same weights in a second model: ``bf16`` (mixed_bfloat16: bf16 matmuls, float32 variables,
        LayerNorm and softmax)."""
        if kind not in copies:
            other = build("mixed_bfloat16")
            other.set_weights(model.get_weights())
            copies[kind] = other
        return copies[kind]

    for name in variants:
        path = os.path.join(work_dir, name)
        if name == "albert_tf_xla":
            export_classifier(model, path, labels=LABELS, text_pair=True, spm_model_file=spm_model_file,
                              max_seq_length=SEQ, jit_compile=True)
        elif name == "albert_tf_fixed_padding":
            export_classifier(model, path, labels=LABELS, text_pair=True, spm_model_file=spm_model_file,
                              max_seq_length=SEQ, bucket_lengths=None)
        elif name == "albert_tf_bf16":
            export_classifier(copy("bf16"), path, labels=LABELS, text_pair=True, spm_model_file=spm_model_file,
                              max_seq_length=SEQ)
        elif name == "albert_tf_xla_bf16":
            export_classifier(copy("bf16"), path, labels=LABELS, text_pair=True, spm_model_file=spm_model_file,
                              max_seq_length=SEQ, jit_compile=True)
        else:
            continue
        paths[name] = path
    return {"paths": paths, "build_s": round(time.perf_counter() - t0, 1)}


# ----------------------------------------------------------------------------------------------- sides

class Side:
    """What a worker owns: ``parts`` (name -> zero-argument callable timed by the driver: ``request`` always;
    ``tokenize`` / ``model`` for the profile), ``info`` (ids, probabilities, label, threads, versions) and an
    optional ``trace`` (op-type breakdown, matmul floor)."""

    def __init__(self, parts: dict, info: dict, trace=None):
        self.parts, self.info, self.trace = parts, info, trace


def _tf_threads() -> dict:
    import tensorflow as tf

    return {"tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
            "note": "0 = TensorFlow's default (one per core)",
            "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset (TF default: on)")}


def _built_on_first_call(build):
    """A part whose first call builds it (``build()`` returns the callable, after one untimed run) and runs it: the
    matmul chains are made only when the profile asks for them, not before the timed requests."""
    made = []

    def part():
        if not made:
            made.append(build())
        return made[0]()

    return part


def _tf_matmul_chain(dims: dict):
    """A callable running the forward's dense matmul chain (embedding projection + L x [QKV, output, FFN in,
    FFN out], batch 1 x SEQ, float32) bare in a tf.function: the floor for the model part in this framework."""
    import tensorflow as tf

    H, L = dims["H"], dims["L"]
    g = tf.random.Generator.from_seed(0)
    x0 = g.normal((SEQ, dims["E"]))
    # Weights scaled by 1/sqrt(fan_in) keep the activations ~N(0, 1): no denormals, whatever the framework's FTZ.
    w = [g.normal(s) / s[0] ** 0.5 for s in chain_shapes(dims)]

    @tf.function
    def chain(x0, w_in, w_qkv, w_o, w_1, w_2):
        x = tf.matmul(x0, w_in)
        for _ in range(L):
            qkv = tf.matmul(x, w_qkv)
            x = tf.matmul(tf.matmul(tf.matmul(qkv[:, :H], w_o), w_1), w_2)
        return x

    run = lambda: chain(x0, *w).numpy()
    run()
    return run


def _tf_op_breakdown(export_dir: str, feeds: dict, runs: int = 3) -> dict:
    """Time per op type of one ``serving_default`` request and the dense positions it computed
    (``albert_tf.export.work``: TF1 session, full trace)."""
    from albert_tf.export.work import MATMUL_OPS, dense_work, trace_request

    traced = trace_request(export_dir, feeds, output="label", runs=runs, warmup=3)
    totals = traced.time_per_op_type()
    matmul = sum(v for k, v in totals.items() if k in MATMUL_OPS)
    text_ops = sum(v for k, v in totals.items() if any(s in k for s in ("Sentencepiece", "Regex", "Unicode",
                                                                        "String", "NormalizeUTF8", "Lookup")))
    total = sum(totals.values())
    return {
        "what": "TF1 session (TF Serving's loader), FULL_TRACE of serving_default, op time summed per op type, "
                f"mean of {runs} traced requests; ops may overlap (inter-op threads), so the sum can exceed the wall",
        "traced_request_wall_ms": round(statistics.median(traced.walls) * 1e3, 1),
        "sum_of_op_ms": round(total, 1),
        "matmul_ms": round(matmul, 1),
        "text_ops_ms": round(text_ops, 1),
        "other_ops_ms": round(total - matmul - text_ops, 1),
        "top_ops_ms": {k: round(v, 2) for k, v in list(totals.items())[:14]},
        "dense_positions": _positions_summary(dense_work(traced)),
    }


def _positions_summary(work: list[tuple[int, int]]) -> dict:
    """``(positions, width)`` of each dense matmul of one request -> how many of each shape, and the sum of
    positions x width over them."""
    counts = dict(collections.Counter(f"{positions}x{width}" for positions, width in work))
    return {"what": "the dense matmuls of one request (2-D outputs: projections, FFN, pooler, head): how many of "
                    "each positions x output width", "matmuls": len(work), "by_shape": counts,
            "positions_x_width": sum(p * w for p, w in work)}


def albert_tf_side(spec: dict, variant: str) -> Side:
    """The stock export through ``tf.saved_model.load`` (or, for variants, another loader/setting/export)."""
    if variant == "albert_tf_onednn_off":
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # before TensorFlow is imported in this worker
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the SentencePiece ops the export needs)

    if variant == "albert_tf_inter_op_1":
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(os.cpu_count() or 1)
    paths, text_a, text_b = spec["paths"], spec["text_a"], spec["text_b"]
    export_dir = paths.get(variant, paths["albert_tf"])
    info = {"threads": _tf_threads()}
    parts = {}
    if variant == "albert_tf_tf1_session":
        graph = tf.Graph()
        with graph.as_default():
            sess = tf.compat.v1.Session(graph=graph)
            meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], export_dir)
        sig = meta.signature_def["serving_default"]
        names = {k: sig.inputs[k].name for k in ("text_a", "text_b")}
        fetches = {k: sig.outputs[k].name for k in ("label", "probabilities")}

        def feed():
            return {names[k]: np.array([v], dtype=object) for k, v in (("text_a", text_a), ("text_b", text_b))}

        def request():
            return sess.run(fetches["label"], feed())[0].decode()

        probabilities = sess.run(fetches["probabilities"], feed())[0]
        info["path"] = "tf.compat.v1.saved_model.loader.load(session, ['serve'], dir); session.run(label)"
    else:
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]

        def request():
            out = serve(text_a=tf.constant([text_a]), text_b=tf.constant([text_b]))
            return out["label"].numpy()[0].decode()

        probabilities = serve(text_a=tf.constant([text_a]), text_b=tf.constant([text_b]))["probabilities"].numpy()[0]
        info["path"] = "tf.saved_model.load(dir).signatures['serving_default'](text_a=[a], text_b=[b])['label']"
    parts["request"] = request
    info.update(label=request(), probabilities=[float(p) for p in probabilities])
    if variant != "albert_tf":
        return Side(parts, info)

    # The profile pieces: the same preprocessor exported alone, and the export's token-id signature on fixed ids.
    pre = tf.saved_model.load(paths["preprocessor"]).signatures["serve_text_pair"]
    ids_sig = tf.saved_model.load(export_dir).signatures["serve_token_ids"]
    feats = pre(text_a=tf.constant([text_a]), text_b=tf.constant([text_b]))
    ids = {"input_ids": feats["input_word_ids"], "input_mask": feats["input_mask"],
           "segment_ids": feats["input_type_ids"]}
    check = ids_sig(**ids)["probabilities"].numpy()[0]

    def tokenize():
        return pre(text_a=tf.constant([text_a]), text_b=tf.constant([text_b]))["input_word_ids"].numpy()

    def model():
        return ids_sig(**ids)["label"].numpy()[0].decode()

    parts.update(tokenize=tokenize, model=model,
                 matmul_chain=_built_on_first_call(functools.partial(_tf_matmul_chain, spec["dims"])))
    info.update(
        input_ids=[int(x) for x in ids["input_ids"].numpy()[0]],
        segment_ids=[int(x) for x in ids["segment_ids"].numpy()[0]],
        num_tokens=int(ids["input_mask"].numpy().sum()),
        token_id_signature_probability_diff=float(np.abs(check - probabilities).max()),
    )

    def trace():
        return {"op_breakdown": _tf_op_breakdown(export_dir, {"text_a": [text_a], "text_b": [text_b]})}

    return Side(parts, info, trace)


def _torch_matmul_chain(torch, dims: dict):
    """The same dense matmul chain as :func:`_tf_matmul_chain`, in torch (eager, inference mode)."""
    H, L = dims["H"], dims["L"]
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(SEQ, dims["E"], generator=g)
    w_in, w_qkv, w_o, w_1, w_2 = (torch.randn(s, generator=g) / s[0] ** 0.5 for s in chain_shapes(dims))

    def run():
        with torch.inference_mode():
            x = x0 @ w_in
            for _ in range(L):
                qkv = x @ w_qkv
                x = ((qkv[:, :H] @ w_o) @ w_1) @ w_2
            return x

    run()
    return run


def transformers_side(spec: dict, variant: str) -> Side:
    import numpy as np
    import torch
    import transformers
    from transformers import AlbertForSequenceClassification, AutoTokenizer

    torch.set_num_threads(TORCH_THREADS)
    path, text_a, text_b = spec["paths"]["huggingface"], spec["text_a"], spec["text_b"]
    tokenizer = AutoTokenizer.from_pretrained(path)
    net = AlbertForSequenceClassification.from_pretrained(path).eval()

    def encode():
        # No padding: a batch of one runs at its own length (the long pair fills all 128 positions either way).
        return tokenizer(text_a, text_b, truncation=True, max_length=SEQ, return_tensors="pt")

    def request():
        with torch.inference_mode():
            logits = net(**encode()).logits
            return LABELS[int(logits.argmax(-1)[0])]

    enc = encode()

    def tokenize():
        return encode()

    def model():
        with torch.inference_mode():
            return LABELS[int(net(**enc).logits.argmax(-1)[0])]

    with torch.inference_mode():
        probabilities = torch.softmax(net(**enc).logits, -1)[0].tolist()
    info = {
        "path": "AutoTokenizer(a, b, truncation=True, max_length=128, return_tensors='pt') -> "
                "AlbertForSequenceClassification(**enc).logits.argmax(-1) under torch.inference_mode()",
        "threads": {"torch_num_threads": torch.get_num_threads(),
                    "torch_interop_threads": torch.get_num_interop_threads(),
                    "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "unset")},
        "tokenizer_class": type(tokenizer).__name__,
        "tokenizer_is_fast": bool(getattr(tokenizer, "is_fast", False)),
        "attention_implementation": getattr(net.config, "_attn_implementation", None),
        "label": request(),
        "probabilities": [float(p) for p in probabilities],
        "input_ids": [int(x) for x in enc["input_ids"][0]],
        "segment_ids": [int(x) for x in enc["token_type_ids"][0]],
        "num_tokens": int(enc["attention_mask"].sum()),
        "transformers_version": transformers.__version__,
    }

    def trace(runs: int = 3):
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(runs):
                request()
        rows = sorted(prof.key_averages(), key=lambda r: r.self_cpu_time_total, reverse=True)
        # the shapes in a second pass: recording them slows the elementwise ops' timings many times over
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as shapes:
            for _ in range(runs):
                request()
        work = []  # every nn.Linear call of one request: (positions, output width)
        for r in shapes.key_averages(group_by_input_shape=True):
            if r.key == "aten::linear" and r.input_shapes and len(r.input_shapes) > 1:
                x, weight = r.input_shapes[0], r.input_shapes[1]
                work += [(int(np.prod(x[:-1])), int(weight[0]))] * (r.count // runs)
        per_op = {r.key: r.self_cpu_time_total / 1e3 / runs for r in rows}
        matmul = sum(v for k, v in per_op.items() if k in TORCH_MATMUL_OPS)
        total = sum(per_op.values())
        return {"op_breakdown": {
            "what": f"torch.profiler self CPU time per aten op, mean of {runs} requests (the tokenizer is not an "
                    "aten op: it is outside this sum)",
            "sum_of_op_ms": round(total, 1),
            "matmul_ms": round(matmul, 1),
            "other_ops_ms": round(total - matmul, 1),
            "top_ops_ms": {k: round(v, 2) for k, v in list(per_op.items())[:14]},
            "dense_positions": _positions_summary(work),
        }}

    parts = {"request": request, "tokenize": tokenize, "model": model,
             "matmul_chain": _built_on_first_call(functools.partial(_torch_matmul_chain, torch, spec["dims"]))}
    return Side(parts, info, trace)


# name -> (factory, what it is); the first two are the headline, the rest experimental variants.
SIDES = {
    "albert_tf": (albert_tf_side, "stock export_classifier SavedModel, tf.saved_model.load + signatures, defaults"),
    "transformers": (transformers_side, "AutoTokenizer + torch AlbertForSequenceClassification, 2 threads"),
    "albert_tf_tf1_session": (albert_tf_side, "stock export through the TF1 session loader (TF Serving's path)"),
    "albert_tf_inter_op_1": (albert_tf_side, "stock export, tf.config.threading inter_op=1, intra_op=cpu_count"),
    "albert_tf_onednn_off": (albert_tf_side, "stock export, TF_ENABLE_ONEDNN_OPTS=0 (Eigen kernels)"),
    "albert_tf_xla": (albert_tf_side, "export_classifier(jit_compile=True): the forward under XLA "
                                      "(export_savedmodel --export_jit_compile)"),
    "albert_tf_bf16": (albert_tf_side, "stock export_classifier of the same weights in a mixed_bfloat16 model"),
    "albert_tf_fixed_padding": (albert_tf_side, "export_classifier(bucket_lengths=None): every request padded to 128 "
                                                "(export_savedmodel --bucket_lengths=none, the official export)"),
    "albert_tf_xla_bf16": (albert_tf_side, "export_classifier(jit_compile=True) of the mixed_bfloat16 model"),
}
HEADLINE = ("albert_tf", "transformers")
VARIANTS = tuple(k for k in SIDES if k not in HEADLINE)


# ----------------------------------------------------------------------------------------------- processes

class _Build:
    """The build worker's handler: writes every export on construction; ``info`` is what ``build_exports`` returns."""

    def __init__(self, work_dir: str, spm_model_file: str, seed: int, variants: list[str], dims: dict) -> None:
        self.info = build_exports(work_dir, spm_model_file, seed, variants, dims)

    def __call__(self, message):
        raise ValueError(f"the build worker answers nothing ({message!r})")


class _SideWorker:
    """One side in its worker: each part name is answered with its wall time in seconds, "trace" with a dict."""

    def __init__(self, name: str, spec: dict) -> None:
        self.side = SIDES[name][0](spec, name)
        self.info = self.side.info

    def __call__(self, message: str):
        if message == "trace":
            return self.side.trace()
        fn = self.side.parts[message]
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t


def run_rounds(workers: dict, plan: list[tuple[str, str]], wanted: int, max_rounds: int, max_foreign: float,
               pause: float, failed: dict) -> dict:
    """Interleaved rounds: each round asks every ``(worker, part)`` of ``plan`` once, ``pause`` s apart, starting one
    place further along ``plan`` than the round before, so no side always runs right after the same other one. Rounds go
    on until ``wanted`` of them were quiet (foreign CPU share below ``max_foreign``) or ``max_rounds`` ran; the
    quiet rounds are kept, or every round where fewer were quiet. A variant worker that fails is dropped (its name
    and error go to ``failed``); a headline worker that fails raises."""
    meter = ForeignLoad([os.getpid()] + workers.pids())
    per_round: list[dict] = []
    foreign: list[float | None] = []
    while len(per_round) < max_rounds and sum(f is not None and f < max_foreign for f in foreign) < wanted:
        times = {}
        meter.start()
        turn = len(per_round) % len(plan)  # each round starts one worker later: no side always follows the same one
        for name, part in plan[turn:] + plan[:turn]:
            if name not in workers.names:
                continue
            time.sleep(pause)
            try:
                times[(name, part)] = workers.ask(name, part, 300)
            except WorkerError as e:
                if name in HEADLINE:
                    raise
                failed[name] = str(e)
                workers.drop(name)
        foreign.append(meter.stop())
        per_round.append(times)
    quiet = [f is not None and f < max_foreign for f in foreign]
    enough = sum(quiet) >= wanted
    kept = [r for r, q in zip(per_round, quiet) if q] if enough else per_round
    dropped = [r for r, q in zip(per_round, quiet) if not q] if enough else []
    collect = lambda rounds, key: [r[key] for r in rounds if key in r]
    return {
        "times": {key: collect(kept, key) for key in plan},
        "dropped": {key: collect(dropped, key) for key in plan},
        "rounds_run": len(per_round),
        "rounds_kept": len(kept),
        "disturbed": not enough,
        "foreign_cpu_share_per_round": foreign,
    }


# ----------------------------------------------------------------------------------------------- report

def _stats(times: list[float]) -> dict:
    ms = sorted(t * 1e3 for t in times)
    q = statistics.quantiles(ms, n=10) if len(ms) >= 2 else [ms[0]] * 9
    return {"median_ms": round(statistics.median(ms), 1), "p10_ms": round(q[0], 1), "p90_ms": round(q[-1], 1),
            "min_ms": round(ms[0], 1), "n": len(ms)}


def _max_diff(p: list[float], q: list[float]) -> float:
    return max(abs(a - b) for a, b in zip(p, q, strict=True))


# ----------------------------------------------------------------------------------------------- main

def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="timed requests per side, interleaved (median reported)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed requests per side after the first")
    parser.add_argument("--profile_runs", type=int, default=20,
                        help="timed tokenize-only / model-only / matmul-chain calls per headline side")
    parser.add_argument("--pause", type=float, default=0.05, help="seconds between consecutive requests")
    parser.add_argument("--max_foreign", type=float, default=0.1,
                        help="a round counts when other processes used less than this share of the CPUs during it")
    parser.add_argument("--max_rounds_factor", type=float, default=3.0,
                        help="give up waiting for quiet rounds after this many times --runs rounds (then all count)")
    parser.add_argument("--variants", default="all",
                        help=f"comma list of experimental variants, 'all' or 'none': {','.join(VARIANTS)}")
    parser.add_argument("--no_trace", action="store_true", help="skip the op-type breakdowns")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    parser.add_argument("--spm_model_file", default=None,
                        help="SentencePiece model (default: <shared data>/spm/30k-clean.model, where the shared data "
                             "is $ALBERT_TF_SHARED_DATA or ../shared/data beside the project)")
    parser.add_argument("--mrpc_file", default=None, help="MRPC tsv for the input pair (default: <shared "
                        "data>/glue/MRPC/dev.tsv; built-in English text where absent)")
    parser.add_argument("--pair", choices=("long", "short"), default="long",
                        help="long: a pair that fills all 128 positions (the headline); short: one real MRPC pair "
                             "(~50 tokens), where the export's length bucketing and transformers' unpadded batch of "
                             "one both run at about the real length (the profile's GFLOP figures assume 128)")
    parser.add_argument("--keep_dir", default=None, help="write the exports and worker logs here and keep them")
    parser.add_argument("--smoke", action="store_true",
                        help="the preset's config cut to 2 layers, H 64, E 16, I 128 (the other scripts' smoke size): "
                             "every variant, profile and trace end to end in far less time; the figures mean nothing. "
                             "With --runs 1 --warmup 0 --profile_runs 1 it is the test suite's smoke run")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0 or args.profile_runs < 0 or args.max_rounds_factor < 1:
        parser.error("--runs must be >= 1, --warmup and --profile_runs >= 0, --max_rounds_factor >= 1")
    if args.variants in ("all", ""):
        args.variant_list = list(VARIANTS)
    elif args.variants == "none":
        args.variant_list = []
    else:
        args.variant_list = [v.strip() for v in args.variants.split(",") if v.strip()]
        unknown = sorted(set(args.variant_list) - set(VARIANTS))
        if unknown:
            parser.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    return args


def _ms(seconds: float, digits: int = 1) -> float:
    return round(seconds * 1e3, digits)


def main() -> None:
    args = parse_args()
    shared = shared_data_dir()
    spm_model_file = args.spm_model_file or str(shared / "spm" / "30k-clean.model")
    if not os.path.isfile(spm_model_file):
        sys.exit(f"serving_latency: SentencePiece model not found: {spm_model_file} (the real ALBERT vocab from "
                 "../shared/data/spm; give --spm_model_file or set ALBERT_TF_SHARED_DATA)")
    text_a, text_b, source = benchmark_pair(args.mrpc_file or str(shared / "glue" / "MRPC" / "dev.tsv"),
                                            short=args.pair == "short")
    variants = args.variant_list

    started = time.perf_counter()
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    work_dir = args.keep_dir or tempfile.mkdtemp(prefix="albert_serving_latency_")
    os.makedirs(work_dir, exist_ok=True)
    keep = bool(args.keep_dir)
    try:
        with Workers(log_dir=work_dir) as workers:
            # 1. Build every export in a process of its own (the driver never imports TensorFlow).
            dims = SMOKE if args.smoke else BASE
            workers.start("build", functools.partial(_Build, work_dir, spm_model_file, args.seed, variants, dims))
            built = workers.ready("build", 1800)
            workers.drop("build")
            spec = {"paths": built["paths"], "text_a": text_a, "text_b": text_b, "dims": dims}

            # 2. One worker per side; each loads, answers once (ids, probabilities) and warms up, one at a time.
            failed: dict[str, str] = {}
            infos: dict[str, dict] = {}
            first: dict[str, float] = {}
            for name in list(HEADLINE) + variants:
                t = time.perf_counter()
                workers.start(name, functools.partial(_SideWorker, name, spec))
                try:
                    infos[name] = workers.ready(name, 900)
                    infos[name]["load_and_first_answer_s"] = round(time.perf_counter() - t, 2)
                    first[name] = workers.ask(name, "request", 900)
                    for _ in range(args.warmup):
                        workers.ask(name, "request", 300)
                except WorkerError as e:
                    if name in HEADLINE:
                        raise
                    failed[name] = str(e)
                    if name in workers.names:
                        workers.drop(name)

            # 3. Timed requests, interleaved round by round (quiet rounds kept); then the profile parts the same way.
            time.sleep(1.0)
            load_before = os.getloadavg()
            max_rounds = int(args.runs * args.max_rounds_factor)
            requests = run_rounds(workers, [(n, "request") for n in workers.names], args.runs, max_rounds,
                                  args.max_foreign, args.pause, failed)
            load_after = os.getloadavg()
            plan = [(n, part) for n in HEADLINE for part in ("tokenize", "model", "matmul_chain")]
            profile_rounds = (run_rounds(workers, plan, args.profile_runs,
                                         int(args.profile_runs * args.max_rounds_factor), args.max_foreign,
                                         args.pause, failed) if args.profile_runs else None)
            traces = {}
            if not args.no_trace:
                for name in HEADLINE:
                    meter = ForeignLoad(workers.pids())
                    meter.start()
                    traces[name] = workers.ask(name, "trace", 900)
                    traces[name]["op_breakdown"]["foreign_cpu_share"] = meter.stop()
    except WorkerError:
        keep = True  # the worker logs the error names stay
        raise
    finally:
        if not keep:
            shutil.rmtree(work_dir, ignore_errors=True)

    measured = {"infos": infos, "first": first, "failed": failed, "requests": requests, "variants": variants,
                "profile_rounds": profile_rounds, "traces": traces, "date": date, "source": source, "text_a": text_a,
                "text_b": text_b, "spm_model_file": spm_model_file, "max_rounds": max_rounds, "built": built,
                "load_before": load_before, "load_after": load_after, "started": started}
    print(json.dumps(report(args, measured), indent=2))


def report(args: argparse.Namespace, run: dict) -> dict:
    """The JSON object from what ``main`` measured."""
    infos, first, failed, requests = run["infos"], run["first"], run["failed"], run["requests"]
    results = {}
    for name in infos:
        if name in failed:
            continue
        ts = requests["times"][(name, "request")]
        dropped = requests["dropped"][(name, "request")]
        info = infos[name]
        results[name] = {
            **_stats(ts),
            "first_request_ms": _ms(first[name]),
            "load_and_first_answer_s": info["load_and_first_answer_s"],
            "label": info["label"],
            "path": info["path"],
            "threads": info["threads"],
            "times_ms": [_ms(t) for t in ts],
            "dropped_rounds_median_ms": _ms(statistics.median(dropped)) if dropped else None,
        }
    med = {name: r["median_ms"] for name, r in results.items()}
    ratio = med["albert_tf"] / med["transformers"]
    ours, ref = infos["albert_tf"], infos["transformers"]

    sanity = {
        "max_abs_probability_diff": _max_diff(ours["probabilities"], ref["probabilities"]),
        "tolerance": 1e-4,
        # the real tokens (albert-tf's preprocessor pads to 128; transformers' batch of one is unpadded)
        "input_ids_identical": ours["num_tokens"] == ref["num_tokens"]
        and ours["input_ids"][:ours["num_tokens"]] == ref["input_ids"][:ref["num_tokens"]],
        "segment_ids_identical": ours["segment_ids"][:ours["num_tokens"]] == ref["segment_ids"][:ref["num_tokens"]],
        "labels": {"albert_tf": ours["label"], "transformers": ref["label"]},
        "probabilities": {"albert_tf": ours["probabilities"], "transformers": ref["probabilities"]},
        "albert_tf_token_id_signature_vs_text_signature": ours["token_id_signature_probability_diff"],
    }
    sanity["same_model"] = bool(sanity["max_abs_probability_diff"] <= sanity["tolerance"]
                                and sanity["input_ids_identical"] and sanity["segment_ids_identical"])

    dims = SMOKE if args.smoke else BASE
    model = "smoke (ALBERT-base v2 with 2 layers, H 64)" if args.smoke else "ALBERT-base v2"
    gflop = forward_gflop(dims)
    chain_gflop = _dense_flop(dims) / 1e9
    profile: dict = {
        "what": "each side's request split into tokenization alone and model alone (interleaved calls, medians); "
                "rest = request median - tokenize - model",
        "forward_gflop": round(gflop, 2),
        "matmul_chain_what": f"the forward's dense matmuls alone (embedding projection + {dims['L']} x [QKV, output, "
                             "FFN in, FFN out], 1 x 128, float32) in a bare loop of each framework: a floor for the "
                             "model part in float32 on this machine",
    }
    pr = run["profile_rounds"]
    for name in HEADLINE:
        entry: dict = {"request_median_ms": med[name]}
        if pr is not None:
            tok, mod, chain = (statistics.median(pr["times"][(name, p)]) * 1e3
                               for p in ("tokenize", "model", "matmul_chain"))
            entry.update(
                tokenize_median_ms=round(tok, 2),
                model_median_ms=round(mod, 1),
                rest_ms=round(med[name] - tok - mod, 1),
                model_share_of_request=round(mod / med[name], 3),
                model_achieved_gflops=round(gflop / (mod / 1e3), 1),
                matmul_chain_median_ms=round(chain, 1),
                matmul_chain_gflops=round(chain_gflop / (chain / 1e3), 1),
                model_over_matmul_chain=round(mod / chain, 3),
            )
        if name in run["traces"]:
            entry.update(run["traces"][name])
        profile[name] = entry
    profile["albert_tf"]["parts_what"] = (
        "tokenize = the same AlbertPreprocessor exported alone by export_preprocessor (signature serve_text_pair); "
        "model = the export's serve_token_ids signature on precomputed ids (forward + softmax + argmax -> label)"
    )
    profile["transformers"]["parts_what"] = (
        "tokenize = the tokenizer call (return_tensors='pt'); model = forward + argmax on precomputed tensors"
    )
    if pr is not None:
        a, t = profile["albert_tf"], profile["transformers"]
        floor = a["tokenize_median_ms"] + min(a["matmul_chain_median_ms"], t["matmul_chain_median_ms"])
        profile["albert_tf_float32_floor_over_transformers"] = round(floor / med["transformers"], 3)
        profile["albert_tf_float32_floor_what"] = (
            "(albert-tf tokenize + the faster framework's bare matmul chain) / transformers request median: the "
            "ratio albert-tf would reach in float32 if nothing but tokenization and the dense matmuls took time"
        )
        profile["rounds"] = {k: pr[k] for k in ("rounds_run", "rounds_kept", "disturbed",
                                                 "foreign_cpu_share_per_round")}

    variant_report: dict = {
        "experimental": True,
        "note": "not the headline: each changes the loader, a runtime setting or the export (an option of the "
                "package's export_classifier), measured in the same interleaved rounds as the headline; over_* are "
                "ratios of medians",
    }
    for name in run["variants"]:
        if name in failed:
            variant_report[name] = {"what": SIDES[name][1], "failed": failed[name]}
            continue
        r = results[name]
        variant_report[name] = {
            "what": SIDES[name][1],
            "median_ms": r["median_ms"],
            "over_transformers": round(r["median_ms"] / med["transformers"], 3),
            "over_albert_tf_stock": round(r["median_ms"] / med["albert_tf"], 3),
            "max_abs_probability_diff_vs_transformers": _max_diff(infos[name]["probabilities"], ref["probabilities"]),
            **{k: v for k, v in r.items() if k != "median_ms"},
        }

    return {
        "benchmark": "smoke_serving_latency" if args.smoke else "albert_base_serving_latency",
        "what": f"raw text pair in, label out, batch 1, seq 128, {model} dims, random weights (seed "
                f"{args.seed}), 2 labels; median of {len(results['albert_tf']['times_ms'])} interleaved requests "
                "per side",
        "albert_tf_latency_over_transformers": round(ratio, 3),
        "albert_tf_median_ms": med["albert_tf"],
        "transformers_median_ms": med["transformers"],
        "target_ratio": TARGET_RATIO,
        "meets_target": bool(ratio <= TARGET_RATIO),
        "date_utc": run["date"],
        "input": {
            "source": run["source"],
            "pair": args.pair,
            "text_a_chars": len(run["text_a"]),
            "text_b_chars": len(run["text_b"]),
            "max_seq_length": SEQ,
            "tokens": {"albert_tf": ours["num_tokens"], "transformers": ref["num_tokens"]},
            "spm_model_file": os.path.abspath(run["spm_model_file"]),
        },
        "sanity": sanity,
        "results": {k: results[k] for k in HEADLINE},
        "rounds": {
            "rule": f"a round (one request per worker) is kept when other processes used < {args.max_foreign} of the "
                    f"CPUs during it, until {args.runs} are kept; if fewer are quiet after {run['max_rounds']} "
                    "rounds, every round is kept and disturbed is true",
            **{k: requests[k] for k in ("rounds_run", "rounds_kept", "disturbed", "foreign_cpu_share_per_round")},
        },
        "profile": profile,
        "variants": variant_report,
        "transformers_side": {k: ref[k] for k in ("tokenizer_class", "tokenizer_is_fast", "attention_implementation")},
        "machine": {**machine_info(), "loadavg_1min_before_after": [round(run["load_before"][0], 2),
                                                                    round(run["load_after"][0], 2)]},
        "versions": versions(),
        "settings": {"smoke": args.smoke, "runs": args.runs, "warmup": args.warmup, "profile_runs": args.profile_runs,
                     "pause_s": args.pause, "max_foreign": args.max_foreign, "seed": args.seed,
                     "variants": run["variants"], "build_s": run["built"]["build_s"], "export_dir": args.keep_dir},
        "wall_s": round(time.perf_counter() - run["started"], 1),
    }


if __name__ == "__main__":
    run_main(main)
