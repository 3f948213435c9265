"""Fine-tune ALBERT on a GLUE task: train, evaluate every checkpoint, predict the test set, export.

The official ``run_classifier.py`` flags (same names and defaults, spec 4.1) plus the shared
trainer's strategy/precision flags. Per-task presets from the official ``run_glue.sh``:
``--flagfile=configs/glue/<task>.flags``. The job itself is ``albert_tf.classifier_runner.run``.

Example::

  python run_classifier.py --flagfile=configs/glue/mrpc.flags --data_dir=glue --output_dir=out/mrpc \\
      --albert_config_file=albert_base_v2 --spm_model_file=30k-clean.model \\
      --init_checkpoint=albert_base/model.ckpt-best --do_train --do_eval --do_predict --export_dir=out/mrpc/export
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from albert_tf import classifier_runner  # noqa: E402

FLAGS = flags.FLAGS


def define_flags(flag_values: flags.FlagValues = FLAGS) -> None:
    """The flags of run_classifier.py (idempotent).

    On the global ``FLAGS`` the shared trainer flags come from ``albert_tf.training.flags`` with the
    official run_classifier defaults (adamw, 5e-5, 1000 steps, no warmup, keep every checkpoint), and
    the official ``--train_step`` / ``--warmup_step`` are aliases of its ``--num_train_steps`` /
    ``--num_warmup_steps``. Any other ``flag_values`` gets stand-alone definitions of the same flags.
    """
    if flag_values is FLAGS:
        from albert_tf.training import flags as shared

        shared.define_strategy_flags()
        shared.define_training_loop_flags(steps_per_loop=1000, save_checkpoints_steps=1000, keep_checkpoint_max=0)
        shared.define_optimizer_flags(optimizer="adamw", learning_rate=5e-5, num_train_steps=1000, num_warmup_steps=0)
        shared.define_checkpoint_flags()
        for alias, target in (("train_step", "num_train_steps"), ("warmup_step", "num_warmup_steps")):
            if alias not in FLAGS:
                flags.DEFINE_alias(alias, target)

    def _define(kind: str, name: str, default, help_text: str, **kw) -> None:
        if name in flag_values:
            return
        if kind == "enum":
            flags.DEFINE_enum(name, default, kw.pop("enum_values"), help_text, flag_values=flag_values, **kw)
        else:
            getattr(flags, f"DEFINE_{kind}")(name, default, help_text, flag_values=flag_values, **kw)

    # Official run_classifier.py flags.
    _define("string", "data_dir", None, "GLUE root folder holding <TASK>/train.tsv, dev.tsv, test.tsv (required).")
    _define(
        "string",
        "task_name",
        None,
        "GLUE task (case-insensitive): " + ", ".join(classifier_runner.glue.PROCESSORS) + " (required).",
    )
    _define("string", "output_dir", None, "Checkpoints, eval results and predictions go here (required).")
    _define(
        "string",
        "albert_config_file",
        None,
        "albert_config.json of the pretrained model, or a preset name (albert_base_v2, albert_tiny, ...).",
    )
    _define(
        "string", "spm_model_file", None, "SentencePiece model (30k-clean.model). '' selects WordPiece (--vocab_file)."
    )
    _define("string", "vocab_file", None, "WordPiece vocab (Chinese models); unused with --spm_model_file.")
    _define(
        "string",
        "init_checkpoint",
        None,
        "Pretrained checkpoint to initialise from (official TF1, albert-tf or Hugging Face). Without it the run "
        "trains from random initialisation and says so loudly.",
    )
    _define("string", "cached_dir", None, "Where feature TFRecords are cached (default: --output_dir).")
    _define("bool", "do_lower_case", True, "Lower-case the text (preprocess_text).")
    _define("integer", "max_seq_length", 512, "Tokens per example after packing; <= max_position_embeddings.")
    _define("bool", "do_train", False, "Fine-tune on train.tsv.")
    _define("bool", "do_eval", False, "Evaluate every checkpoint on dev.tsv and keep the best (output_dir/best/).")
    _define("bool", "do_predict", False, "Predict test.tsv into {Task}.tsv (GLUE submission) and test_results.tsv.")
    _define("integer", "train_batch_size", 32, "Global training batch size.")
    _define("integer", "eval_batch_size", 8, "Evaluation batch size.")
    _define("integer", "predict_batch_size", 8, "Prediction batch size.")
    _define("float", "learning_rate", 5e-5, "Peak learning rate (linear warmup, then linear decay to 0).")
    _define("integer", "train_step", 1000, "Total training steps.")
    _define("integer", "warmup_step", 0, "Linear warmup steps.")
    _define("integer", "save_checkpoints_steps", 1000, "Save (and, with --do_eval, evaluate) every this many steps.")
    _define(
        "integer",
        "keep_checkpoint_max",
        0,
        "Checkpoints to keep; 0 keeps all (the official RunConfig). Nothing else is ever deleted.",
    )
    _define("integer", "iterations_per_loop", 1000, "Steps per host call (min'ed with --save_checkpoints_steps).")
    _define("enum", "optimizer", "adamw", "Optimizer (official semantics).", enum_values=["adamw", "lamb"])
    _define(
        "string",
        "export_dir",
        None,
        "Write a SavedModel (raw-text serving_default + token-id signature) of the best weights to <dir>/<step>.",
    )
    _define(
        "float",
        "threshold_to_export",
        float("nan"),
        "With --export_dir: also return this float scalar as 'threshold' from every signature (NaN: none).",
    )
    _define("bool", "use_tpu", False, "Official flag: same as --strategy=tpu.")
    _define("string", "tpu_name", None, "TPU name or address (with --strategy=tpu).")
    _define("string", "tpu_zone", None, "GCE zone of the TPU.")
    _define("string", "gcp_project", None, "GCP project of the TPU.")
    # Ours.
    _define("float", "classifier_dropout", 0.1, "Dropout on the pooled output before the classifier (official 0.1).")
    _define(
        "string",
        "predict_checkpoint",
        None,
        "Predict/export from this fine-tuned checkpoint instead of output_dir's best (predict-only mode).",
    )
    _define("integer", "seed", 12345, "Seed of the training input shuffle.")
    _define(
        "enum",
        "sharing",
        "all",
        "Cross-layer sharing (paper Table 4).",
        enum_values=["all", "attention", "ffn", "none"],
    )
    # Shared trainer flags (defined here only if the trainer's flag module did not define them).
    _define(
        "enum",
        "strategy",
        "one_device",
        "tf.distribute strategy.",
        enum_values=["one_device", "mirrored", "multi_worker_mirrored", "tpu"],
    )
    _define("integer", "num_cpu_devices", 1, "With --strategy=mirrored and no GPU: logical CPU replicas.")
    _define(
        "enum",
        "mixed_precision",
        "float32",
        "Keras dtype policy.",
        enum_values=["float32", "mixed_float16", "mixed_bfloat16"],
    )
    _define("bool", "jit_compile", False, "Compile the train step with XLA.")
    _define("integer", "gradient_accumulation_steps", 1, "Micro-batches accumulated per update.")


def config_from_flags() -> classifier_runner.RunConfig:
    for name in ("data_dir", "task_name", "output_dir", "albert_config_file"):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--{name} is required")
    if FLAGS.spm_model_file is None and not FLAGS.vocab_file:
        raise app.UsageError("--spm_model_file is required ('' with --vocab_file selects WordPiece)")
    optimizer_fn = None
    if "poly_power" in FLAGS:  # the shared optimizer flags (weight decay, epsilon, clipping, poly power)
        from albert_tf.training import flags as shared

        optimizer_fn = shared.optimizer_fn_from_flags(
            FLAGS, num_train_steps=FLAGS.train_step, num_warmup_steps=FLAGS.warmup_step
        )
    use_tpu = "use_tpu" in FLAGS and FLAGS.use_tpu
    return classifier_runner.RunConfig(
        data_dir=FLAGS.data_dir,
        task_name=FLAGS.task_name,
        output_dir=FLAGS.output_dir,
        albert_config_file=FLAGS.albert_config_file,
        spm_model_file=FLAGS.spm_model_file or None,
        vocab_file=FLAGS.vocab_file,
        init_checkpoint=FLAGS.init_checkpoint or None,
        do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length,
        do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval,
        do_predict=FLAGS.do_predict,
        train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
        learning_rate=FLAGS.learning_rate,
        train_step=FLAGS.train_step,
        warmup_step=FLAGS.warmup_step,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        optimizer=FLAGS.optimizer,
        classifier_dropout=FLAGS.classifier_dropout,
        cached_dir=FLAGS.cached_dir,
        export_dir=FLAGS.export_dir,
        threshold_to_export=None if math.isnan(FLAGS.threshold_to_export) else FLAGS.threshold_to_export,
        predict_checkpoint=FLAGS.predict_checkpoint,
        seed=FLAGS.seed,
        strategy="tpu" if use_tpu else FLAGS.strategy,
        num_cpu_devices=FLAGS.num_cpu_devices,
        tpu=FLAGS.tpu_name,
        tpu_zone=FLAGS.tpu_zone,
        gcp_project=FLAGS.gcp_project,
        mixed_precision=FLAGS.mixed_precision,
        jit_compile=FLAGS.jit_compile,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        sharing=FLAGS.sharing,
        optimizer_fn=optimizer_fn,
        deterministic="deterministic" in FLAGS and FLAGS.deterministic,
    )


def _main(argv) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    cfg = config_from_flags()
    try:
        summary = classifier_runner.run(cfg)
    except (classifier_runner.RunError, classifier_runner.glue.GlueDataError) as e:
        raise SystemExit(f"run_classifier: error: {e}") from None
    best = summary.get("best")
    if best:
        key = summary["key_metric"]
        print(f"best {key} = {best[key]:.4f} at step {best['global_step']}", flush=True)


def main() -> None:
    """Console entry point."""
    define_flags()
    app.run(_main)


if __name__ == "__main__":
    main()
