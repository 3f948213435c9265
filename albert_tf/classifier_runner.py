"""GLUE fine-tuning job behind ``run_classifier.py`` (spec 4.1), on the shared ``Trainer``.

``run(RunConfig)`` does what the official runner does, in one process and with its user
complaints fixed (spec section 9, items 7, 8, 14):

* Everything is validated before any long work: task name, config vs ``max_seq_length``,
  tokenizer, every TSV the requested modes read (``GlueDataError`` names file and line), and
  ``output_dir`` (a directory holding checkpoints of another run -- e.g. the pretrained model
  directory, google-research/albert#224 -- is refused instead of being "resumed").
* Without ``init_checkpoint`` the job warns loudly that it trains from random initialisation
  (google-research/albert#132). Initialising (weights only) is distinct from resuming (a
  checkpoint of this run in ``output_dir``), as in the shared Trainer.
* Training is ``albert_tf.training.trainer.Trainer`` with a :class:`GlueTask`; no second loop.
* ``do_eval`` evaluates **every** saved checkpoint on the whole dev set (in-process as it is
  saved when training, else by scanning ``output_dir``), with the exact task metrics of
  ``albert_tf.evaluation.glue_metrics``, and keeps the best by the official key metric (MCC for
  CoLA, Pearson for STS-B, accuracy otherwise) as a copy in ``output_dir/best/``. Nothing is
  deleted: the official loop deleted every non-best checkpoint; here only
  ``keep_checkpoint_max`` (0 = keep all, the official RunConfig) prunes.
* Outputs: ``eval_results.txt`` (``key = value`` per checkpoint), ``eval_results.json`` (every
  metric of every checkpoint + the best), ``best_trial.txt`` (official
  ``global_step:best_step:best_value``), ``test_results.tsv`` (class probabilities / scores) and
  the GLUE submission file ``{Task}.tsv`` (``index``/``prediction``; labels as strings, STS-B
  clipped to [0, 5]).
* ``export_dir``: a SavedModel of the best (else latest) weights with a raw-text signature
  (``albert_tf.export.serving``), in ``export_dir/<global step>``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from absl import logging

from albert_tf.data import glue
from albert_tf.evaluation import glue_metrics

META_FILE = "run_classifier.json"
BEST_DIR = "best"
BEST_PREFIX = "ckpt-best"


class RunError(ValueError):
    """A flag combination or an output directory that cannot work; raised before any training."""


@dataclasses.dataclass
class RunConfig:
    """The official ``run_classifier.py`` flags (same names and defaults) plus the shared trainer's."""

    data_dir: str
    task_name: str
    output_dir: str
    albert_config_file: str
    spm_model_file: str | None = None
    vocab_file: str | None = None
    init_checkpoint: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 512
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    train_step: int = 1000
    warmup_step: int = 0
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    keep_checkpoint_max: int = 0  # 0 keeps every checkpoint (the official RunConfig)
    optimizer: str = "adamw"
    classifier_dropout: float = 0.1
    cached_dir: str | None = None
    export_dir: str | None = None
    threshold_to_export: float | None = None
    predict_checkpoint: str | None = None
    seed: int = 12345
    strategy: str = "one_device"
    num_cpu_devices: int = 1
    tpu: str | None = None
    tpu_zone: str | None = None
    gcp_project: str | None = None
    mixed_precision: str = "float32"
    jit_compile: bool = False
    gradient_accumulation_steps: int = 1
    sharing: str = "all"
    # Zero-argument optimizer factory (the CLI builds it from the shared optimizer flags); None: the
    # official optimizer named by ``optimizer`` with ``learning_rate``/``train_step``/``warmup_step``.
    optimizer_fn: Callable[[], Any] | None = dataclasses.field(default=None, repr=False)
    deterministic: bool = False


# ---------------------------------------------------------------------- the task for the Trainer
class GlueTask:
    """What the shared Trainer needs for one GLUE task (``albert_tf.training.trainer.Task``)."""

    def __init__(
        self,
        processor: glue.GlueProcessor,
        albert_config: Any,
        max_seq_length: int,
        classifier_dropout: float = 0.1,
        sharing: str = "all",
        train_record: str | None = None,
        eval_record: str | None = None,
        seed: int | None = None,
    ) -> None:
        self.processor = processor
        self.albert_config = albert_config
        self.max_seq_length = max_seq_length
        self.classifier_dropout = classifier_dropout
        self.sharing = sharing
        self.train_record = train_record
        self.eval_record = eval_record
        self.seed = seed

    @property
    def num_labels(self) -> int:
        return self.processor.num_labels

    def build_model(self):
        from albert_tf.modeling.classifier import AlbertClassifier

        model = AlbertClassifier(
            self.albert_config, self.num_labels, classifier_dropout=self.classifier_dropout, sharing=self.sharing
        )
        dummy = np.zeros((1, 2), np.int32)
        model({"input_ids": dummy, "input_mask": dummy, "segment_ids": dummy}, training=False)
        return model

    def _dataset(self, record: str | None, batch: int, training: bool, drop_remainder: bool = False):
        if record is None:
            return None
        return glue.load_dataset(
            record,
            self.max_seq_length,
            self.processor.is_regression,
            batch,
            is_training=training,
            seed=self.seed,
            drop_remainder=drop_remainder,
        )

    def train_dataset(self, global_batch_size: int):
        return self._dataset(self.train_record, global_batch_size, training=True)

    def eval_dataset(self, global_batch_size: int):
        return self._dataset(self.eval_record, global_batch_size, training=False, drop_remainder=True)

    def compute_loss(self, model, features, training: bool):
        import tensorflow as tf

        from albert_tf.modeling.classifier import classification_loss

        inputs = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids")}
        logits = model(inputs, training=training)["logits"]
        loss = classification_loss(logits, features["label_ids"], self.num_labels)
        logs = {"loss": loss}
        if not self.processor.is_regression:
            hits = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), features["label_ids"]), tf.float32)
            logs["accuracy"] = tf.reduce_mean(hits)
        return loss, logs

    def eval_sums(self, model, features):
        import tensorflow as tf

        loss, logs = self.compute_loss(model, features, training=False)
        n = tf.cast(tf.shape(features["label_ids"])[0], tf.float32)
        sums = {"loss_sum": loss * n, "count": n}
        if "accuracy" in logs:
            sums["correct"] = logs["accuracy"] * n
        return sums

    def eval_metrics(self, sums: dict[str, float]) -> dict[str, float]:
        out = {"eval_loss": sums["loss_sum"] / max(sums["count"], 1.0)}
        if "correct" in sums:
            out["accuracy"] = sums["correct"] / max(sums["count"], 1.0)
        return out


# ---------------------------------------------------------------------- evaluation / prediction
_PREDICT_FNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def predict_logits(model, dataset) -> np.ndarray:
    """Float32 logits [N, num_labels] of ``model`` (inference mode) over every batch of ``dataset``."""
    import tensorflow as tf

    step = _PREDICT_FNS.get(model)
    if step is None:
        spec = tf.TensorSpec([None, None], tf.int32)

        @tf.function(input_signature=[{"input_ids": spec, "input_mask": spec, "segment_ids": spec}])
        def step(inputs):
            return model(inputs, training=False)["logits"]

        _PREDICT_FNS[model] = step
    out = []
    for batch in dataset:
        inputs = {k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}
        out.append(np.asarray(step(inputs), np.float32))
    return np.concatenate(out, axis=0) if out else np.zeros((0, 1), np.float32)


def per_example_loss(logits: np.ndarray, labels: np.ndarray, regression: bool) -> np.ndarray:
    """The official per-example loss: softmax cross-entropy, or squared error for regression."""
    logits = np.asarray(logits, np.float64)
    if regression:
        return (logits.reshape(-1) - np.asarray(labels, np.float64).reshape(-1)) ** 2
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -log_probs[np.arange(len(labels)), np.asarray(labels, np.int64)]


def evaluate_logits(processor: glue.GlueProcessor, logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Every GLUE metric of the task plus ``eval_loss`` and ``num_examples``."""
    regression = processor.is_regression
    preds = logits.reshape(-1) if regression else np.argmax(logits, axis=-1)
    metrics = glue_metrics.glue_metrics(processor.name, labels, preds)
    metrics["eval_loss"] = float(np.mean(per_example_loss(logits, labels, regression)))
    metrics["num_examples"] = int(len(labels))
    return metrics


def record_labels(record_file: str, max_seq_length: int, regression: bool) -> np.ndarray:
    ds = glue.load_dataset(record_file, max_seq_length, regression, 512, is_training=False)
    return np.concatenate([np.asarray(b["label_ids"]) for b in ds])


def list_checkpoints(output_dir: str) -> list[tuple[int, str]]:
    """(step, prefix) of the Trainer's ``ckpt-N`` checkpoints in ``output_dir``, by step."""
    found = []
    if os.path.isdir(output_dir):
        for name in os.listdir(output_dir):
            m = re.fullmatch(r"ckpt-(\d+)\.index", name)
            if m:
                found.append((int(m.group(1)), os.path.join(output_dir, name[: -len(".index")])))
    return sorted(found)


def restore_weights(model, prefix: str) -> None:
    """Read the model weights of a Trainer checkpoint (or a ``best/`` copy) into ``model``."""
    import tensorflow as tf

    from albert_tf.training import checkpointing

    ckpt = tf.train.Checkpoint(**{checkpointing.WEIGHTS_KEY: checkpointing.model_weights(model)})
    ckpt.read(prefix).expect_partial()


def save_best_weights(model, output_dir: str, step: int) -> str:
    """Copy the current weights (and their step) to ``output_dir/best/ckpt-best`` (Trainer layout, no optimizer)."""
    import tensorflow as tf

    from albert_tf.training import checkpointing

    prefix = os.path.join(output_dir, BEST_DIR, BEST_PREFIX)
    items = {checkpointing.WEIGHTS_KEY: checkpointing.model_weights(model), "global_step": tf.Variable(step, tf.int64)}
    tf.train.Checkpoint(**items).write(prefix)
    return prefix


def checkpoint_step(prefix: str) -> int:
    """The ``global_step`` stored in a Trainer checkpoint or best copy (0 when it has none)."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    key = "global_step/.ATTRIBUTES/VARIABLE_VALUE"
    return int(reader.get_tensor(key)) if reader.has_tensor(key) else 0


class CheckpointEvaluator:
    """Evaluates checkpoints on dev, keeps the history and the best copy; writes the result files."""

    def __init__(
        self, processor: glue.GlueProcessor, output_dir: str, dev_record: str, max_seq_length: int, batch: int
    ):
        self.processor = processor
        self.output_dir = output_dir
        self.dev_record = dev_record
        self.max_seq_length = max_seq_length
        self.batch = batch
        self.key = glue_metrics.key_metric(processor.name)
        self.labels = record_labels(dev_record, max_seq_length, processor.is_regression)
        self.json_path = os.path.join(output_dir, "eval_results.json")
        self.history: list[dict[str, Any]] = []
        if os.path.isfile(self.json_path):
            with open(self.json_path, encoding="utf-8") as f:
                self.history = json.load(f).get("checkpoints", [])

    @property
    def evaluated_steps(self) -> set[int]:
        return {int(h["global_step"]) for h in self.history}

    @property
    def best(self) -> dict[str, Any] | None:
        if not self.history:
            return None
        # Earliest step wins ties (the official loop keeps the first best).
        return max(self.history, key=lambda h: (h[self.key], -h["global_step"]))

    def evaluate(self, model, step: int) -> dict[str, Any]:
        ds = glue.load_dataset(
            self.dev_record, self.max_seq_length, self.processor.is_regression, self.batch, is_training=False
        )
        metrics = evaluate_logits(self.processor, predict_logits(model, ds), self.labels)
        metrics["global_step"] = int(step)
        previous = self.best
        self.history = [h for h in self.history if h["global_step"] != step] + [metrics]
        self.history.sort(key=lambda h: h["global_step"])
        if previous is None or metrics[self.key] > previous[self.key]:
            save_best_weights(model, self.output_dir, step)
            logging.info("new best %s = %.4f at step %d", self.key, metrics[self.key], step)
        self.write()
        print(
            f"eval step {step}: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items() if isinstance(v, float)),
            flush=True,
        )
        return metrics

    def write(self) -> None:
        best = self.best
        payload = {"task": self.processor.name, "key_metric": self.key, "best": best, "checkpoints": self.history}
        with open(self.json_path, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1, sort_keys=True)
        with open(os.path.join(self.output_dir, "eval_results.txt"), "w", encoding="utf-8") as f:
            for h in self.history:
                f.write(f"***** eval results at global_step {h['global_step']} *****\n")
                for k in sorted(h):
                    f.write(f"{k} = {h[k]}\n")
            if best is not None:
                f.write(f"***** best by {self.key} *****\n")
                for k in sorted(best):
                    f.write(f"{k} = {best[k]}\n")
        if best is not None:
            last = self.history[-1]["global_step"]
            with open(os.path.join(self.output_dir, "best_trial.txt"), "w", encoding="utf-8") as f:
                f.write(f"{last}:{best['global_step']}:{best[self.key]}\n")


# ---------------------------------------------------------------------- checks before work
def _warn_random_init() -> None:
    banner = "!" * 100
    msg = (
        f"\n{banner}\n!! WARNING: no --init_checkpoint: fine-tuning starts from RANDOM initialisation.\n"
        "!! Scores will be near chance (google-research/albert#132). Pass --init_checkpoint=<pretrained ALBERT: "
        "official TF1, albert-tf or Hugging Face checkpoint>.\n"
        f"{banner}"
    )
    logging.warning(msg)


# Tasks that share a model: MNLI-mismatched and the AX diagnostic are evaluated/predicted with an MNLI model.
TASK_FAMILY = {"mnli-mm": "mnli", "ax": "mnli"}


def _check_output_dir(cfg: RunConfig, processor: glue.GlueProcessor) -> str:
    """Refuse to 'resume' from checkpoints some other job wrote into ``output_dir``; return the results folder.

    Results (eval files, best copy, predictions) go to ``output_dir`` for the task that trained there and
    to ``output_dir/<task>/`` for a task of the same family using that model (mnli-mm, ax in an MNLI run).
    """
    meta_path = os.path.join(cfg.output_dir, META_FILE)
    has_ckpt = os.path.exists(os.path.join(cfg.output_dir, "checkpoint")) or bool(list_checkpoints(cfg.output_dir))
    has_tf1 = (
        any(n.startswith("model.ckpt") for n in os.listdir(cfg.output_dir)) if os.path.isdir(cfg.output_dir) else False
    )
    meta = {
        "task": processor.name,
        "num_labels": processor.num_labels,
        "max_seq_length": cfg.max_seq_length,
        "albert_config_file": cfg.albert_config_file,
    }
    if os.path.isfile(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            old = json.load(f)
        family = TASK_FAMILY.get(meta["task"], meta["task"])
        if family != TASK_FAMILY.get(old.get("task"), old.get("task")) or old.get("num_labels") != meta["num_labels"]:
            raise RunError(
                f"--output_dir {cfg.output_dir} holds a {old.get('task')} run ({old.get('num_labels')} labels); "
                f"this is {meta['task']}: choose another --output_dir"
            )
        if old.get("task") != meta["task"]:
            if cfg.do_train:
                raise RunError(
                    f"--output_dir {cfg.output_dir} trains {old.get('task')}; train {meta['task']} elsewhere"
                )
            return os.path.join(cfg.output_dir, meta["task"])
    elif has_ckpt or has_tf1:
        raise RunError(
            f"--output_dir {cfg.output_dir} already holds checkpoints that run_classifier did not write "
            f"(no {META_FILE}); "
            "resuming from them would restore the wrong model. If this is the pretrained model, pass it as "
            "--init_checkpoint and choose a new --output_dir (google-research/albert#224)"
        )
    if cfg.do_train:
        os.makedirs(cfg.output_dir, exist_ok=True)
        with open(meta_path, "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
    return cfg.output_dir


def load_tokenizer(cfg: RunConfig):
    from albert_tf.tokenization import FullTokenizer

    if cfg.spm_model_file:
        return FullTokenizer(do_lower_case=cfg.do_lower_case, spm_model_file=cfg.spm_model_file)
    if cfg.vocab_file:
        return FullTokenizer(vocab_file=cfg.vocab_file, do_lower_case=cfg.do_lower_case)
    raise RunError("give --spm_model_file (SentencePiece) or --vocab_file (WordPiece, with --spm_model_file='')")


def load_albert_config(name_or_path: str):
    from albert_tf.config import AlbertConfig

    return AlbertConfig.load(name_or_path)


def validate(cfg: RunConfig) -> tuple[glue.GlueProcessor, Any, Any]:
    """Everything that can be checked before building a model: raises RunError / GlueDataError / ConfigError."""
    if not (cfg.do_train or cfg.do_eval or cfg.do_predict or cfg.export_dir):
        raise RunError("at least one of --do_train, --do_eval, --do_predict or --export_dir is required")
    processor = glue.get_processor(cfg.task_name)
    if cfg.export_dir and not cfg.spm_model_file:
        raise RunError("--export_dir writes an in-graph SentencePiece tokenizer: it needs --spm_model_file")
    albert_config = load_albert_config(cfg.albert_config_file)
    albert_config.check_max_seq_length(cfg.max_seq_length)
    tokenizer = load_tokenizer(cfg)
    if tokenizer.vocab_size != albert_config.vocab_size:
        raise RunError(
            f"the tokenizer has {tokenizer.vocab_size} pieces but albert_config vocab_size is "
            f"{albert_config.vocab_size}: vocab and config do not belong together"
        )
    if cfg.do_train:
        for name in ("train_step", "train_batch_size", "save_checkpoints_steps"):
            if getattr(cfg, name) < 1:
                raise RunError(f"--{name} must be >= 1, got {getattr(cfg, name)}")
    needed = [s for s, on in ((glue.TRAIN, cfg.do_train), (glue.DEV, cfg.do_eval), (glue.TEST, cfg.do_predict)) if on]
    for split in needed:
        processor.get_examples(cfg.data_dir, split)  # parse + validate every row now
    return processor, albert_config, tokenizer


# ---------------------------------------------------------------------- the job
def run(cfg: RunConfig) -> dict[str, Any]:
    """Train / evaluate / predict / export as the flags ask; returns a summary dict (also in ``run_summary.json``)."""
    processor, albert_config, tokenizer = validate(cfg)
    results_dir = _check_output_dir(cfg, processor)
    os.makedirs(results_dir, exist_ok=True)
    import keras

    keras.utils.set_random_seed(cfg.seed)  # model initialisation and dropout; the input shuffle is seeded too
    cache_dir = cfg.cached_dir or cfg.output_dir

    def features(split: str) -> glue.CachedSplit:
        return glue.cached_features(processor, cfg.data_dir, split, tokenizer, cfg.max_seq_length, cache_dir)

    train = features(glue.TRAIN) if cfg.do_train else None
    dev = features(glue.DEV) if cfg.do_eval else None
    test = features(glue.TEST) if cfg.do_predict else None
    task = GlueTask(
        processor,
        albert_config,
        cfg.max_seq_length,
        classifier_dropout=cfg.classifier_dropout,
        sharing=cfg.sharing,
        train_record=train.record_file if train else None,
        eval_record=dev.record_file if dev else None,
        seed=cfg.seed,
    )
    summary: dict[str, Any] = {"task": processor.name, "key_metric": glue_metrics.key_metric(processor.name)}
    evaluator = (
        CheckpointEvaluator(processor, results_dir, dev.record_file, cfg.max_seq_length, cfg.eval_batch_size)
        if dev
        else None
    )
    model = None
    if cfg.do_train:
        summary["num_train_examples"] = train.num_examples
        model = _train(cfg, task, evaluator)
    if evaluator is not None:
        model = model or task.build_model()
        for step, prefix in list_checkpoints(cfg.output_dir):
            if step not in evaluator.evaluated_steps:
                restore_weights(model, prefix)
                evaluator.evaluate(model, step)
        if not evaluator.history:
            raise RunError(f"--do_eval: no checkpoint (ckpt-N) in {cfg.output_dir} to evaluate; train first")
        summary["eval"] = evaluator.history
        summary["best"] = evaluator.best
    if cfg.do_predict or cfg.export_dir:
        model = model or task.build_model()
        source, step = _load_for_inference(cfg, model, results_dir)
        summary["inference_checkpoint"] = source
        if cfg.do_predict:
            summary["predict"] = _predict(cfg, processor, model, test, results_dir)
        if cfg.export_dir:
            summary["export_dir"] = _export(cfg, processor, tokenizer, model, step, source)
    with open(os.path.join(results_dir, "run_summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, sort_keys=True, default=str)
    return summary


def _train(cfg: RunConfig, task: GlueTask, evaluator: CheckpointEvaluator | None):
    from albert_tf.training.optimizers import create_optimizer
    from albert_tf.training.schedules import WarmupPolynomialDecay
    from albert_tf.training.strategy import make_strategy
    from albert_tf.training.trainer import Trainer, TrainerConfig

    resuming = bool(list_checkpoints(cfg.output_dir))
    if not cfg.init_checkpoint and not resuming:
        _warn_random_init()
    if cfg.mixed_precision != "float32":
        import keras

        keras.mixed_precision.set_global_policy(cfg.mixed_precision)
    strategy = make_strategy(
        cfg.strategy,
        tpu=cfg.tpu,
        tpu_zone=cfg.tpu_zone,
        gcp_project=cfg.gcp_project,
        num_cpu_devices=cfg.num_cpu_devices,
    )
    trainer_config = TrainerConfig(
        model_dir=cfg.output_dir,
        train_batch_size=cfg.train_batch_size,
        num_train_steps=cfg.train_step,
        steps_per_loop=max(1, min(cfg.iterations_per_loop, cfg.save_checkpoints_steps)),
        save_checkpoints_steps=cfg.save_checkpoints_steps,
        keep_checkpoint_max=cfg.keep_checkpoint_max or None,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        jit_compile=cfg.jit_compile,
        mixed_precision=cfg.mixed_precision,
        eval_batch_size=cfg.eval_batch_size,
    )

    def official_optimizer():
        schedule = WarmupPolynomialDecay(cfg.learning_rate, cfg.train_step, cfg.warmup_step)
        return create_optimizer(cfg.optimizer, schedule)

    if cfg.deterministic:
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
    trainer = Trainer(task, strategy, trainer_config, optimizer_fn=cfg.optimizer_fn or official_optimizer)

    def on_loop_end(step: int, logs: dict) -> None:
        # Called just before the Trainer saves ckpt-<step>: evaluate exactly that state.
        saving = step % cfg.save_checkpoints_steps == 0 or step >= cfg.train_step
        if evaluator is not None and saving and step not in evaluator.evaluated_steps:
            evaluator.evaluate(trainer.model, step)

    trainer.train(init_checkpoint=cfg.init_checkpoint, on_loop_end=on_loop_end)
    return trainer.model


def _load_for_inference(cfg: RunConfig, model, results_dir: str | None = None) -> tuple[str, int]:
    """Weights for predict/export: --predict_checkpoint, else the best copy (this task's, then the run's), else
    the latest ckpt-N. Returns (source, step)."""
    from albert_tf.training import checkpointing

    if cfg.predict_checkpoint:
        report = checkpointing.init_from_checkpoint(model, cfg.predict_checkpoint)
        missing = [n for n in report.missing if "seed_generator" not in n]
        if missing:
            raise RunError(
                f"--predict_checkpoint {cfg.predict_checkpoint} lacks {len(missing)} variable(s) of this model "
                f"(e.g. {missing[0]}): it is not a fine-tuned {cfg.task_name} checkpoint"
            )
        return cfg.predict_checkpoint, checkpoint_step(checkpointing.resolve_checkpoint_path(cfg.predict_checkpoint))
    for folder in dict.fromkeys([results_dir or cfg.output_dir, cfg.output_dir]):
        best_prefix = os.path.join(folder, BEST_DIR, BEST_PREFIX)
        if os.path.exists(best_prefix + ".index"):
            restore_weights(model, best_prefix)
            return best_prefix, checkpoint_step(best_prefix)
    ckpts = list_checkpoints(cfg.output_dir)
    if ckpts:
        restore_weights(model, ckpts[-1][1])
        return ckpts[-1][1], ckpts[-1][0]
    raise RunError(
        f"nothing to predict/export with: no best/ or ckpt-N in {cfg.output_dir} and no --predict_checkpoint"
    )


def _predict(cfg: RunConfig, processor, model, test: glue.CachedSplit, results_dir: str) -> dict[str, Any]:
    ds = glue.load_dataset(
        test.record_file, cfg.max_seq_length, processor.is_regression, cfg.predict_batch_size, is_training=False
    )
    logits = predict_logits(model, ds)
    if len(logits) != test.num_examples:
        raise RuntimeError(f"predicted {len(logits)} rows for {test.num_examples} test examples")
    if processor.is_regression:
        values = logits.reshape(-1, 1)
    else:
        shifted = logits - logits.max(-1, keepdims=True)
        values = np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)
    results = os.path.join(results_dir, "test_results.tsv")
    with open(results, "w", encoding="utf-8") as f:
        for row in values:
            f.write("\t".join(f"{v:.6f}" for v in row) + "\n")
    rows = glue.submission_rows(processor, test.examples, values)
    submission = os.path.join(results_dir, f"{processor.submission_name}.tsv")
    glue.write_submission(submission, rows)
    logging.info("wrote %s (%d rows) and %s", submission, len(rows), results)
    return {"submission": submission, "test_results": results, "num_examples": len(rows)}


def _export(cfg: RunConfig, processor, tokenizer, model, step: int, source: str) -> str:
    from albert_tf.export.serving import export_classifier
    from albert_tf.tokenization import AlbertPreprocessor

    path = os.path.join(cfg.export_dir, str(step))
    pre = AlbertPreprocessor.from_tokenizer(tokenizer, cfg.max_seq_length)
    text_pair = processor.layouts[next(iter(processor.layouts))].text_b is not None
    export_classifier(
        model,
        path,
        labels=processor.get_labels(),
        text_pair=text_pair,
        preprocessor=pre,
        threshold=cfg.threshold_to_export,
        metadata={
            "task": processor.name,
            "max_seq_length": cfg.max_seq_length,
            "tokenizer": tokenizer.identity(),
            "checkpoint": source,
            "global_step": step,
        },
    )
    logging.info("exported SavedModel to %s", path)
    return path


def export_checkpoint(
    task_name: str,
    albert_config_file: str,
    spm_model_file: str,
    checkpoint: str,
    export_dir: str,
    max_seq_length: int = 512,
    do_lower_case: bool = True,
    sharing: str = "all",
    threshold: float | None = None,
) -> str:
    """``export_savedmodel.py``: a fine-tuned checkpoint of ``task_name`` -> SavedModel in ``export_dir/<step>``."""
    cfg = RunConfig(
        data_dir="",
        task_name=task_name,
        output_dir=export_dir,
        albert_config_file=albert_config_file,
        spm_model_file=spm_model_file,
        max_seq_length=max_seq_length,
        do_lower_case=do_lower_case,
        export_dir=export_dir,
        predict_checkpoint=checkpoint,
        sharing=sharing,
        threshold_to_export=threshold,
    )
    processor, albert_config, tokenizer = validate(cfg)
    model = GlueTask(processor, albert_config, max_seq_length, sharing=sharing).build_model()
    source, step = _load_for_inference(cfg, model)
    return _export(cfg, processor, tokenizer, model, step, source)
