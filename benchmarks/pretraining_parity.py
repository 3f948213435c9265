"""Learning-curve parity: albert-tf and Hugging Face's torch ALBERT pretrained from scratch, same data and update.

Is a slow learning curve this code's fault? This script answers it against an independent implementation: it
pretrains the reproduction's small model (``albert_tf.reproduce``'s ``small`` budget: E 128, H 256, 4 layers,
4 heads, vocab 30000, dropout 0, seq 128, 20 predictions, batch 32) twice on the same training records and scores
both on the same held-out SOP records:

* ``albert_tf``: ``albert_tf.tasks.pretraining.curve.pretrain_with_curve`` (the runner skeleton, as the reproduction
  trains);
* ``transformers_torch``: ``transformers.AlbertForPreTraining`` built from the same dimensions, its MLM head
  applied at the masked positions, loss = weighted MLM cross-entropy + SOP cross-entropy (the official loss),
  trained by this file's own torch restatement of the official update (spec 3.4: AdamWeightDecay or LAMB without
  bias correction, eps 1e-6, weight decay 0.01 off LayerNorm/bias, LAMB trust ratio per tensor, global-norm
  clipping 1.0, linear warm-up over 10% of the steps then linear decay to 0, lr 0 at step 0 as official).

The two runs share no code beyond reading the records; initialisation (truncated normal vs normal, std 0.02)
and batch order differ, so the curves agree statistically, not bit for bit: one seed each, so read differences
of a point or two in held-out MLM accuracy as noise. ``--adam_bias_correction`` runs both with Adam's bias
correction instead (not official).

Prints one JSON object: both curves (step, held-out MLM accuracy and loss, SOP accuracy), the difference at each
evaluation, settings, machine (CPU flags) and versions.

    python benchmarks/pretraining_parity.py                          # LAMB 4e-3, 600 steps (~20 min on 2 cores)
    python benchmarks/pretraining_parity.py --optimizer adamw --learning_rate 1e-3 --steps 300
    python benchmarks/pretraining_parity.py --smoke                  # tiny budget, a minute

Where TensorFlow is not installed (the GPU machine), the transformers side runs alone from an .npz of the records:

    python benchmarks/pretraining_parity.py --export_npz sop_small.npz                 # here, with TensorFlow
    python3 benchmarks/pretraining_parity.py --torch_only --records_npz sop_small.npz --device cuda \
        --steps 16000 --eval_every 2000 --output long.json                              # there (results/*_gpu_long)

``--budget medium`` takes the ``medium`` budget instead: its data with ``--export_npz``, its model size, batch and
learning rate with ``--torch_only`` (mix them to train one budget's model on the other's records: the JSON's
``records_made_by`` says whose records they were). ``--dupe_factor N`` makes the records with N maskings instead of
the budget's, and ``--albert_tf_only`` trains albert-tf alone (``results/pretraining_parity_cpu_dupe4.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.common import machine_info, shared_data_dir, versions  # noqa: E402

EXCLUDE_FROM_DECAY = ("LayerNorm", "layer_norm", "bias")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared_data", default=str(shared_data_dir()))
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "albert_tf_pretraining_parity"),
                   help="the budget's records (cached between runs) and checkpoints")
    p.add_argument("--optimizer", choices=("lamb", "adamw"), default="lamb")
    p.add_argument("--learning_rate", type=float, default=None, help="default: the budget's (LAMB 4e-3)")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--eval_every", type=int, default=200)
    p.add_argument("--adam_bias_correction", action="store_true", help="both runs with Adam's bias correction")
    p.add_argument("--torch_threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--budget", choices=("small", "medium"), default="small",
                   help="the reproduction budget whose data, model size, batch and learning rate are used "
                        "(medium: with --export_npz here and --torch_only on a GPU)")
    p.add_argument("--dupe_factor", type=int, default=0,
                   help="make the records with this dupe_factor instead of the budget's (0: the budget's)")
    p.add_argument("--albert_tf_only", action="store_true", help="run albert-tf alone (no transformers run)")
    p.add_argument("--smoke", action="store_true", help="the tiny budget, 20 steps (checks the script)")
    p.add_argument("--export_npz", default="", help="write the budget's SOP train/held-out records to this .npz "
                   "and exit (for --torch_only where TensorFlow is not installed)")
    p.add_argument("--torch_only", action="store_true", help="run transformers alone from --records_npz")
    p.add_argument("--records_npz", default="", help="--torch_only: the .npz of --export_npz")
    p.add_argument("--device", default="cpu", help="--torch_only: the torch device (cpu, cuda)")
    p.add_argument("--train_batch_size", type=int, default=0, help="--torch_only: batch (default: the budget's)")
    p.add_argument("--output", default="", help="--torch_only: also write the JSON here after every evaluation")
    return p.parse_args(argv)


def official_lr(step: int, peak: float, steps: int, warmup: int) -> float:
    """Spec 3.4: linear warm-up (step / warmup, so 0 at step 0) replaces the linear decay to 0 before ``warmup``."""
    if step < warmup:
        return peak * step / warmup
    return peak * max(0.0, 1.0 - step / steps)


def run_albert_tf(budget, data: dict, args, lr: float, warmup: int) -> dict:
    from albert_tf.reproduce.experiments import model_config
    from albert_tf.tasks.pretraining.curve import pretrain_with_curve

    out = os.path.join(args.workdir, f"albert_tf_{args.optimizer}")
    if os.path.isdir(out):
        import shutil

        shutil.rmtree(out)
    result = pretrain_with_curve(
        model_config(budget), data["records"]["train_sop"], data["records"]["heldout_sop"], out,
        num_train_steps=args.steps, train_batch_size=budget.train_batch_size, learning_rate=lr,
        num_warmup_steps=warmup, optimizer=args.optimizer, eval_every=args.eval_every,
        eval_batch_size=budget.eval_batch_size, max_eval_steps=0, steps_per_loop=min(100, args.eval_every),
        seed=args.seed, adam_bias_correction=args.adam_bias_correction,
        log=lambda line: print(f"albert_tf:{line}", file=sys.stderr, flush=True), progress_log=None,
    )
    return {"curve": [{k: point[k] for k in CURVE_FIELDS} for point in result["curve"]], "seconds": result["seconds"]}


CURVE_FIELDS = ("step", "masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy")
FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
            "next_sentence_labels")


def _parsed(path: str, seq: int, pred: int):
    """The records of a pretraining TFRecord file, parsed with the project's schema (what training reads)."""
    import tensorflow as tf

    from albert_tf.data.pretraining.schema import feature_spec

    spec = feature_spec(seq, pred)
    return tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, spec))


def read_records(path: str, seq: int, pred: int) -> dict:
    """Every record of a pretraining TFRecord file as NumPy arrays (int64; weights float32; labels [n])."""
    import numpy as np

    parts: dict[str, list] = {name: [] for name in FEATURES}
    for batch in _parsed(path, seq, pred).batch(4096):
        for name in FEATURES:
            parts[name].append(batch[name].numpy())
    arrays = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    arrays["next_sentence_labels"] = arrays["next_sentence_labels"][:, 0]
    return arrays


def export_records(path: str, budget, data: dict) -> None:
    """``--export_npz``: the budget's SOP training and held-out records as one compressed .npz (``train/...``,
    ``heldout/...``), so that the transformers run can go where TensorFlow is not installed (``--torch_only``)."""
    import numpy as np

    arrays = {}
    for split, key in (("train", "train_sop"), ("heldout", "heldout_sop")):
        for name, value in read_records(data["records"][key], budget.max_seq_length,
                                        budget.max_predictions_per_seq).items():
            small = value.astype(np.float32 if name == "masked_lm_weights" else np.int16)  # ids < 30000
            arrays[f"{split}/{name}"] = small
    tmp = f"{path}.tmp.npz"
    np.savez_compressed(tmp, **arrays, majority=np.asarray(json.dumps(data["baselines"])),
                        data_fields=np.asarray(json.dumps({"budget": budget.name, **budget.fields("data")})))
    os.replace(tmp, path)


class OfficialUpdate:
    """Spec 3.4's AdamWeightDecay / LAMB in torch (no bias correction unless asked), global-norm clipping first."""

    def __init__(self, named_parameters, lamb: bool, bias_correction: bool, clip: float = 1.0,
                 weight_decay: float = 0.01, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-6) -> None:
        import torch

        self.params = [(n, p) for n, p in named_parameters if p.requires_grad]
        self.excluded = {n: any(x in n for x in EXCLUDE_FROM_DECAY) for n, _ in self.params}
        self.state = {n: (torch.zeros_like(p), torch.zeros_like(p)) for n, p in self.params}
        self.lamb, self.bias_correction, self.clip = lamb, bias_correction, clip
        self.wd, self.b1, self.b2, self.eps = weight_decay, b1, b2, eps
        self.t = 0

    def step(self, lr: float) -> None:
        import torch

        self.t += 1
        with torch.no_grad():
            torch.nn.utils.clip_grad_norm_([p for _, p in self.params], self.clip)
            for name, p in self.params:
                m, v = self.state[name]
                m.mul_(self.b1).add_(p.grad, alpha=1 - self.b1)
                v.mul_(self.b2).addcmul_(p.grad, p.grad, value=1 - self.b2)
                if self.bias_correction:
                    u = (m / (1 - self.b1**self.t)) / ((v / (1 - self.b2**self.t)).sqrt() + self.eps)
                else:
                    u = m / (v.sqrt() + self.eps)
                ratio = 1.0
                if not self.excluded[name]:
                    u = u + self.wd * p
                    if self.lamb:  # on the device: no host round trip per tensor
                        w_norm, u_norm = p.norm(), u.norm()
                        ok = (w_norm > 0) & (u_norm > 0)
                        ratio = torch.where(ok, w_norm / torch.where(ok, u_norm, 1.0), 1.0)
                p.sub_(ratio * lr * u)
                p.grad = None


def array_batches(arrays: dict, batch: int, seed: int | None):
    """Batches (dicts of NumPy arrays) of ``arrays``: in order once (``seed`` None), or shuffled epoch after
    epoch, for ever."""
    import numpy as np

    n = len(next(iter(arrays.values())))  # every array has one row per record
    if seed is None:
        for start in range(0, n, batch):
            yield {k: v[start:start + batch] for k, v in arrays.items()}
        return
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(n)
        for start in range(0, n - batch + 1, batch):
            rows = order[start:start + batch]
            yield {k: v[rows] for k, v in arrays.items()}


def tfrecord_batches(path: str, seq: int, pred: int, batch: int, seed: int):
    """The CPU run's training batches: ``tf.data`` shuffled with a 10,000-record buffer (as measured in
    results/pretraining_parity.json)."""
    return _parsed(path, seq, pred).repeat().shuffle(10_000, seed=seed).batch(batch).as_numpy_iterator()


def run_transformers(budget, train_batches, heldout: dict, args, lr: float, warmup: int,
                     checkpoint=None) -> dict:
    """transformers' ALBERT of the budget's size trained from scratch by :class:`OfficialUpdate` on
    ``train_batches``, scored on ``heldout`` (arrays) at step 0 and every ``--eval_every`` steps, on
    ``--device``; ``checkpoint(curve)`` is called after every evaluation (partial results survive a time limit)."""
    import torch
    import transformers

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    device = torch.device(args.device)
    config = transformers.AlbertConfig(
        vocab_size=30000, embedding_size=budget.embedding_size, hidden_size=budget.hidden_size,
        num_hidden_layers=budget.num_layers, num_attention_heads=budget.num_heads,
        intermediate_size=budget.intermediate_size, hidden_act="gelu", hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0, max_position_embeddings=512,
    )
    model = transformers.AlbertForPreTraining(config).to(device)
    update = OfficialUpdate(model.named_parameters(), args.optimizer == "lamb", args.adam_bias_correction)

    def forward(batch):
        tensors = {k: torch.as_tensor(v.astype("float32" if k == "masked_lm_weights" else "int64"), device=device)
                   for k, v in batch.items()}
        tensors["next_sentence_labels"] = tensors["next_sentence_labels"].reshape(-1)
        out = model.albert(input_ids=tensors["input_ids"], attention_mask=tensors["input_mask"],
                           token_type_ids=tensors["segment_ids"])
        positions = tensors["masked_lm_positions"].unsqueeze(-1).expand(-1, -1, config.hidden_size)
        logits = model.predictions(torch.gather(out.last_hidden_state, 1, positions))
        return tensors, logits, model.sop_classifier(out.pooler_output)

    def loss_of(batch):
        tensors, logits, sop = forward(batch)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                               tensors["masked_lm_ids"].reshape(-1), reduction="none")
        weights = tensors["masked_lm_weights"].reshape(-1)
        mlm = (ce * weights).sum() / (weights.sum() + 1e-5)
        return mlm + torch.nn.functional.cross_entropy(sop, tensors["next_sentence_labels"])

    def evaluate(step: int) -> dict:
        model.eval()
        right = count = sop_right = sequences = 0
        loss = 0.0
        with torch.no_grad():
            for batch in array_batches(heldout, budget.eval_batch_size, None):
                tensors, logits, sop = forward(batch)
                mask = tensors["masked_lm_weights"] > 0
                ids = tensors["masked_lm_ids"][mask]
                right += int((logits.argmax(-1)[mask] == ids).sum())
                count += int(mask.sum())
                loss += float(torch.nn.functional.cross_entropy(logits[mask], ids, reduction="sum"))
                sop_right += int((sop.argmax(-1) == tensors["next_sentence_labels"]).sum())
                sequences += len(sop)
        model.train()
        point = {"step": step, "seconds": round(time.time() - start, 1), "masked_lm_accuracy": round(right / count, 4),
                 "masked_lm_loss": round(loss / count, 4), "sentence_order_accuracy": round(sop_right / sequences, 4)}
        print(f"transformers_torch: held-out @ step {step}: {point}", file=sys.stderr, flush=True)
        return point

    start = time.time()
    curve = [evaluate(0)]
    for step in range(args.steps):
        loss_of(next(train_batches)).backward()
        update.step(official_lr(step, lr, args.steps, warmup))
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            curve.append(evaluate(step + 1))
            if checkpoint is not None:
                checkpoint(curve)
    return {"curve": [{k: p[k] for k in CURVE_FIELDS} for p in curve], "seconds": round(time.time() - start, 1),
            "eval_seconds": [p["seconds"] for p in curve]}


def _settings(budget, args, lr: float, warmup: int, majority: dict) -> dict:
    """The run's settings as both modes record them."""
    return {"budget": budget.name, "optimizer": args.optimizer, "learning_rate": lr, "steps": args.steps,
            "warmup_steps": warmup, "train_batch_size": budget.train_batch_size,
            "adam_bias_correction": args.adam_bias_correction, "seed": args.seed, "heldout_majority": majority}


def _load_npz(path: str) -> tuple[dict, dict, dict, dict | None]:
    """(train arrays, held-out arrays, majority baselines, the data fields of the budget that made the records:
    None in files written before they were recorded) of an ``--export_npz`` file, or a one-line SystemExit."""
    import numpy as np

    if not path:
        raise SystemExit("error: --torch_only needs --records_npz (the file --export_npz writes)")
    try:
        with np.load(path) as npz:
            train = {name: npz[f"train/{name}"] for name in FEATURES}
            heldout = {name: npz[f"heldout/{name}"] for name in FEATURES}
            majority = json.loads(str(npz["majority"]))
            data_fields = json.loads(str(npz["data_fields"])) if "data_fields" in npz.files else None
    except OSError as e:
        raise SystemExit(f"error: --records_npz={path}: cannot read it ({e})") from None
    except (KeyError, ValueError) as e:
        raise SystemExit(f"error: --records_npz={path}: not an --export_npz file ({e})") from None
    return train, heldout, majority, data_fields


def torch_only(args) -> dict:
    """``--torch_only``: the transformers run alone, from ``--records_npz`` (no TensorFlow needed), on
    ``--device``; the JSON is written to ``--output`` after every evaluation."""
    from albert_tf.reproduce.budgets import get_budget

    train, heldout, majority, data_fields = _load_npz(args.records_npz)  # a bad file fails before torch is imported
    import torch

    budget = get_budget("tiny" if args.smoke else args.budget)
    if args.train_batch_size:
        budget = dataclasses.replace(budget, train_batch_size=args.train_batch_size)
    lr = args.learning_rate or budget.learning_rate
    warmup = max(1, args.steps // 10)
    settings = {**_settings(budget, args, lr, warmup, majority), "train_records": len(train["input_ids"]),
                "records_made_by": data_fields, "device": args.device,
                "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"}

    def write(curve, done=False):
        result = {"benchmark": "pretraining_parity --torch_only", "settings": settings, "complete": done,
                  "transformers_torch": {"curve": curve}, "versions": versions(("torch", "transformers"))}
        if args.output:
            tmp = f"{args.output}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
            os.replace(tmp, args.output)
        return result

    run = run_transformers(budget, array_batches(train, budget.train_batch_size, args.seed), heldout, args, lr,
                           warmup, checkpoint=write)
    result = write(run["curve"], done=True)
    result["transformers_torch"] = run
    print(json.dumps(result, indent=1))
    return result


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.torch_only:
        return torch_only(args)
    if not os.path.isdir(os.path.join(args.shared_data, "text")):
        result = {"skipped": f"no shared data at {args.shared_data}"}
        print(json.dumps(result))
        return result
    from albert_tf.reproduce.budgets import get_budget
    from albert_tf.reproduce.data import prepare_data

    budget = get_budget("tiny" if args.smoke else args.budget)
    if args.dupe_factor:
        budget = dataclasses.replace(budget, dupe_factor=args.dupe_factor)
    if args.smoke:
        args.steps, args.eval_every = min(args.steps, 20), min(args.eval_every, 10)
    lr = args.learning_rate or budget.learning_rate
    warmup = max(1, args.steps // 10)
    data = prepare_data(budget, args.shared_data, args.workdir,
                        log=lambda line: print(line, file=sys.stderr, flush=True))
    if args.export_npz:
        export_records(args.export_npz, budget, data)
        result = {"exported": args.export_npz, "bytes": os.path.getsize(args.export_npz)}
        print(json.dumps(result))
        return result
    runs = {"albert_tf": run_albert_tf(budget, data, args, lr, warmup)}
    if not args.albert_tf_only:
        heldout = read_records(data["records"]["heldout_sop"], budget.max_seq_length,
                               budget.max_predictions_per_seq)
        train = tfrecord_batches(data["records"]["train_sop"], budget.max_seq_length,
                                 budget.max_predictions_per_seq, budget.train_batch_size, args.seed)
        runs["transformers_torch"] = run_transformers(budget, train, heldout, args, lr, warmup)
        ours, theirs = runs["albert_tf"]["curve"], runs["transformers_torch"]["curve"]
        runs["albert_tf_minus_transformers"] = [
            {"step": a["step"], **{k: round(a[k] - b[k], 4) for k in a if k != "step"}}
            for a, b in zip(ours, theirs)
            if a["step"] == b["step"]
        ]
    result = {
        "benchmark": "pretraining_parity",
        "settings": {**_settings(budget, args, lr, warmup, data["baselines"]), "dupe_factor": budget.dupe_factor},
        **runs,
        "machine": machine_info(),
        "versions": versions(("torch", "transformers")),
    }
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
