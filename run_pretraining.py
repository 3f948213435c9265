"""Pretrain ALBERT (MLM + SOP) on official-format TFRecords: the official flags plus tf.distribute ones.

Example (the paper's recipe is in configs/pretrain_*.flags)::

    run_pretraining --flagfile=configs/pretrain_base.flags
        --input_file='data/tfrecords/train-*.tfrecord' --output_dir=out/base

Resuming: rerun the same command; a checkpoint in --output_dir restores the model, optimizer, step and
input position exactly. --init_checkpoint only initialises the weights (step 0, fresh optimizer).
With --do_eval, masked-LM and sentence-order accuracy/loss go to <output_dir>/eval_results.txt and
TensorBoard (<output_dir>/eval); with --do_train too, evaluation runs at every checkpoint.
"""

from __future__ import annotations

import json
import os
import sys

from absl import app, flags, logging

from albert_tf.training import flags as training_flags

FLAGS = flags.FLAGS


def define_flags() -> None:
    if "albert_config_file" in FLAGS:
        return
    flags.DEFINE_string("albert_config_file", None, "albert_config.json of the model (or a preset name).")
    flags.DEFINE_string("input_file", None, "Comma-separated globs of pretraining TFRecords.")
    flags.DEFINE_string(
        "eval_input_file", None, "Comma-separated globs of held-out TFRecords for --do_eval (default: --input_file, "
        "as the official code, which evaluated on its training files)."
    )
    flags.DEFINE_string("output_dir", None, "Checkpoints, TensorBoard events and eval_results.txt go here.")
    flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the records.")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per record.")
    flags.DEFINE_bool("do_train", True, "Train.")
    flags.DEFINE_bool("do_eval", False, "Evaluate (after training, or the latest checkpoint in --output_dir).")
    flags.DEFINE_integer("train_batch_size", 4096, "Global batch per micro-step (x gradient_accumulation_steps).")
    flags.DEFINE_integer("eval_batch_size", 64, "Global evaluation batch.")
    flags.DEFINE_integer("max_eval_steps", 100, "Evaluation batches (0: the whole --eval_input_file once).")
    flags.DEFINE_integer("shuffle_buffer_size", 100, "Record shuffle buffer (official 100).")
    flags.DEFINE_enum("sharing", "all", ["all", "attention", "ffn", "none"], "Cross-layer sharing (paper Table 4).")
    training_flags.define_all_training_flags(
        optimizer="lamb",
        learning_rate=0.00176,
        num_train_steps=125000,
        num_warmup_steps=3125,
        steps_per_loop=1000,
        save_checkpoints_steps=5000,
        keep_checkpoint_max=5,
    )
    for name in ("albert_config_file", "output_dir"):
        flags.mark_flag_as_required(name)
    # Show the shared training flags in --help (not only --helpfull).
    flags.adopt_module_key_flags(training_flags)


def write_eval_results(output_dir: str, metrics: dict[str, float]) -> str:
    """``eval_results.txt`` as the official (``key = value`` sorted) and a JSON line per evaluation."""
    path = os.path.join(output_dir, "eval_results.txt")
    with open(path, "w", encoding="utf-8") as f:
        for key in sorted(metrics):
            f.write(f"{key} = {metrics[key]}\n")
    with open(os.path.join(output_dir, "eval_results.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(metrics, sort_keys=True) + "\n")
    return path


def _run(_argv) -> int:
    import keras
    import tensorflow as tf

    from albert_tf.config import AlbertConfig, ConfigError
    from albert_tf.training.checkpointing import CheckpointInitError
    from albert_tf.training.pretraining_data import PretrainingDataError, expand_globs, validate_pretraining_files
    from albert_tf.training.trainer import Trainer, TrainerConfig

    if not FLAGS.do_train and not FLAGS.do_eval:
        raise app.UsageError("at least one of --do_train and --do_eval must be set")
    # ---- cheap checks first: config, records, flags (before any model is built)
    try:
        config = AlbertConfig.load(FLAGS.albert_config_file)
        config.check_max_seq_length(FLAGS.max_seq_length)
        train_files = eval_files = None
        if FLAGS.do_train:
            if not FLAGS.input_file:
                raise app.UsageError("--input_file is required with --do_train")
            train_files = expand_globs(FLAGS.input_file, "--input_file")
            validate_pretraining_files(
                train_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, config.vocab_size
            )
        if FLAGS.do_eval:
            eval_glob = FLAGS.eval_input_file or FLAGS.input_file
            if not eval_glob:
                raise app.UsageError("--do_eval needs --eval_input_file (or --input_file)")
            eval_files = expand_globs(eval_glob, "--eval_input_file" if FLAGS.eval_input_file else "--input_file")
            validate_pretraining_files(
                eval_files, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, config.vocab_size
            )
    except (ConfigError, PretrainingDataError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if FLAGS.max_predictions_per_seq > FLAGS.max_seq_length:
        raise app.UsageError("--max_predictions_per_seq cannot exceed --max_seq_length")

    # The strategy first: MultiWorkerMirroredStrategy must exist before any TF op runs.
    strategy = training_flags.strategy_from_flags()
    keras.utils.set_random_seed(FLAGS.seed)
    if FLAGS.deterministic:
        tf.config.experimental.enable_op_determinism()
    training_flags.set_precision_from_flags()
    logging.info("strategy %s with %d replicas", type(strategy).__name__, strategy.num_replicas_in_sync)

    from albert_tf.training.pretraining_task import PretrainingTask

    task = PretrainingTask(
        config,
        train_files,
        eval_files,
        FLAGS.max_seq_length,
        FLAGS.max_predictions_per_seq,
        seed=FLAGS.seed,
        shuffle_buffer_size=FLAGS.shuffle_buffer_size,
        sharing=FLAGS.sharing,
    )
    trainer_config = TrainerConfig(
        model_dir=FLAGS.output_dir,
        train_batch_size=FLAGS.train_batch_size,
        num_train_steps=FLAGS.num_train_steps,
        steps_per_loop=FLAGS.steps_per_loop,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        jit_compile=FLAGS.jit_compile,
        mixed_precision=FLAGS.mixed_precision,
        eval_batch_size=FLAGS.eval_batch_size,
        max_eval_steps=FLAGS.max_eval_steps,
    )
    tf.io.gfile.makedirs(FLAGS.output_dir)
    trainer = Trainer(task, strategy, trainer_config, training_flags.optimizer_fn_from_flags())
    if trainer.chief:
        config.to_json_file(os.path.join(FLAGS.output_dir, "albert_config.json"))

    def evaluate(step: int | None = None) -> dict:
        metrics = trainer.evaluate()
        if trainer.chief:
            path = write_eval_results(FLAGS.output_dir, metrics)
            logging.info("eval at step %d written to %s", int(metrics["global_step"]), path)
            print("eval " + " ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items())), flush=True)
        return metrics

    try:
        if FLAGS.do_train:
            trainer.train(init_checkpoint=FLAGS.init_checkpoint, on_checkpoint=evaluate if FLAGS.do_eval else None)
        elif FLAGS.do_eval:
            how = trainer.restore_or_init(FLAGS.init_checkpoint)
            if how == "fresh":
                logging.warning("evaluating an untrained model: no checkpoint in --output_dir and no --init_checkpoint")
            evaluate()
    except CheckpointInitError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> None:
    """Console entry point ``run_pretraining``."""
    define_flags()

    def _main(args):
        code = _run(args)
        if code:
            sys.exit(code)

    app.run(_main, argv=argv)


if __name__ == "__main__":
    main()
