"""A small in-process pretraining run with a held-out accuracy curve (the demo stage and the benchmark).

Same Trainer, task, optimizer and schedule as ``run_pretraining.py``; the held-out set is evaluated
before training (step 0) and at every checkpoint, so the curve shows learning against the untrained model.
"""

from __future__ import annotations

import time

import keras
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.training.optimizers import create_optimizer
from albert_tf.training.pretraining_data import expand_globs, read_tfrecord_file, validate_pretraining_files
from albert_tf.training.pretraining_task import PretrainingTask
from albert_tf.training.schedules import WarmupPolynomialDecay
from albert_tf.training.trainer import Trainer, TrainerConfig

# Chance levels of the held-out metrics (SOP is a balanced binary task in the official data).
SOP_CHANCE = 0.5


def record_shapes(path: str) -> tuple[int, int]:
    """(max_seq_length, max_predictions_per_seq) of the first record of a pretraining TFRecord file."""
    from tensorflow.core.example import example_pb2

    raw = next(iter(read_tfrecord_file(path, 1)))
    example = example_pb2.Example.FromString(raw)
    return (
        len(example.features.feature["input_ids"].int64_list.value),
        len(example.features.feature["masked_lm_positions"].int64_list.value),
    )


def small_albert_config(vocab_size: int, embedding_size: int = 128, hidden_size: int = 256, layers: int = 4,
                        heads: int = 4, max_position_embeddings: int = 512) -> AlbertConfig:
    """The small ALBERT of the learning benchmark (E 128, H 256, 4 layers by default), dropout 0 (v2 style)."""
    return AlbertConfig(
        vocab_size=vocab_size,
        embedding_size=embedding_size,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden_size,
        max_position_embeddings=max_position_embeddings,
    )


def pretrain_with_curve(
    config: AlbertConfig,
    train_input: str,
    eval_input: str,
    model_dir: str,
    *,
    num_train_steps: int,
    train_batch_size: int = 32,
    learning_rate: float = 2e-3,
    num_warmup_steps: int | None = None,
    eval_every: int = 100,
    eval_batch_size: int = 64,
    max_eval_steps: int = 20,
    steps_per_loop: int = 25,
    optimizer: str = "lamb",
    seed: int = 12345,
    time_budget_s: float | None = None,
    log=print,
    progress_log=print,
) -> dict:
    """Train, evaluating the held-out files at step 0 and every ``eval_every`` steps; returns the curve.

    ``time_budget_s`` stops training at the first checkpoint after the budget (the curve says where).
    """
    train_files = expand_globs(train_input, "train input")
    eval_files = expand_globs(eval_input, "eval input")
    seq, pred = record_shapes(train_files[0])
    validate_pretraining_files(train_files, seq, pred, config.vocab_size)
    validate_pretraining_files(eval_files, seq, pred, config.vocab_size)
    keras.utils.set_random_seed(seed)
    task = PretrainingTask(config, train_files, eval_files, seq, pred, seed=seed)
    warmup = num_warmup_steps if num_warmup_steps is not None else max(1, num_train_steps // 10)
    cfg = TrainerConfig(
        model_dir=model_dir,
        train_batch_size=train_batch_size,
        num_train_steps=num_train_steps,
        steps_per_loop=min(steps_per_loop, eval_every),
        save_checkpoints_steps=eval_every,
        keep_checkpoint_max=2,
        eval_batch_size=eval_batch_size,
        max_eval_steps=max_eval_steps,
    )
    schedule = WarmupPolynomialDecay(learning_rate, num_train_steps=num_train_steps, num_warmup_steps=warmup)
    trainer = Trainer(
        task,
        tf.distribute.OneDeviceStrategy("/cpu:0"),
        cfg,
        lambda: create_optimizer(optimizer, schedule),
        log=progress_log,
    )
    curve = []
    start = time.time()

    def evaluate(step: int) -> None:
        metrics = trainer.evaluate()
        point = {
            "step": step,
            "seconds": round(time.time() - start, 1),
            "masked_lm_accuracy": round(metrics["masked_lm_accuracy"], 4),
            "masked_lm_loss": round(metrics["masked_lm_loss"], 4),
            "sentence_order_accuracy": round(metrics["sentence_order_accuracy"], 4),
            "sentence_order_loss": round(metrics["sentence_order_loss"], 4),
        }
        curve.append(point)
        if log:
            log(
                f"  held-out @ step {step}: MLM acc {point['masked_lm_accuracy']:.3f}"
                f" loss {point['masked_lm_loss']:.3f} | SOP acc {point['sentence_order_accuracy']:.3f}"
                f" loss {point['sentence_order_loss']:.3f}"
            )
        if time_budget_s is not None and time.time() - start > time_budget_s and step < num_train_steps:
            raise _BudgetReached

    evaluate(0)
    stopped_early = False
    try:
        trainer.train(on_checkpoint=evaluate)
    except _BudgetReached:
        stopped_early = True
    train_seconds = time.time() - start
    return {
        "curve": curve,
        "steps_done": int(trainer.global_step.numpy()),
        "stopped_by_time_budget": stopped_early,
        "seconds": round(train_seconds, 1),
        "max_seq_length": seq,
        "max_predictions_per_seq": pred,
        "train_files": train_files,
        "eval_files": eval_files,
        "params": int(sum(v.numpy().size for v in trainer.model.trainable_variables)),
    }


class _BudgetReached(Exception):
    pass


def majority_baselines(train_files: list[str], eval_files: list[str], limit: int = 20000) -> dict:
    """Held-out accuracy of always predicting the training records' most frequent masked token / SOP label.

    The official data's random-document negatives make label 1 more frequent than label 0 when a corpus
    has few, long documents, so SOP "chance" is this majority rate, not 0.5.
    """
    import collections

    from tensorflow.core.example import example_pb2

    def read(files, cap):
        n = 0
        for path in files:
            for raw in read_tfrecord_file(path):
                if cap is not None and n >= cap:
                    return
                n += 1
                yield example_pb2.Example.FromString(raw).features.feature

    def masked(feature):
        ids, weights = feature["masked_lm_ids"].int64_list.value, feature["masked_lm_weights"].float_list.value
        return [i for i, w in zip(ids, weights) if w > 0]

    train_ids, train_labels = collections.Counter(), collections.Counter()
    for f in read(train_files, limit):
        train_ids.update(masked(f))
        train_labels[f["next_sentence_labels"].int64_list.value[0]] += 1
    top_id, top_label = train_ids.most_common(1)[0][0], train_labels.most_common(1)[0][0]
    hits = total = label_hits = count = 0
    for f in read(eval_files, None):
        ids = masked(f)
        hits += sum(1 for i in ids if i == top_id)
        total += len(ids)
        label_hits += int(f["next_sentence_labels"].int64_list.value[0] == top_label)
        count += 1
    return {
        "masked_lm_accuracy_majority_token": round(hits / max(1, total), 4),
        "sentence_order_accuracy_majority_label": round(label_hits / max(1, count), 4),
    }
