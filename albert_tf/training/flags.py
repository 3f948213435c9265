"""absl flags shared by every runner (run_pretraining, run_classifier, run_squad, run_race).

Each ``define_*_flags`` function is idempotent (safe to call twice) and takes the runner's defaults.
Official names are kept (``iterations_per_loop``, ``use_tpu``, ``tpu_name``, ``save_checkpoints_steps``,
``keep_checkpoint_max``, ``optimizer``, ``learning_rate``, ``poly_power``, ``num_warmup_steps``,
``start_warmup_step``) next to the new ones (``strategy``, ``steps_per_loop``, ``mixed_precision``,
``jit_compile``, ``gradient_accumulation_steps``). The ``*_from_flags`` helpers turn them into objects.
"""

from __future__ import annotations

import keras
from absl import flags

from albert_tf.training.optimizers import DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY, create_optimizer
from albert_tf.training.schedules import WarmupPolynomialDecay
from albert_tf.training.strategy import STRATEGIES, make_strategy

FLAGS = flags.FLAGS
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


def _defined(name: str) -> bool:
    return name in FLAGS


def define_strategy_flags() -> None:
    """--strategy, --tpu (alias --tpu_name), --use_tpu, --tpu_zone, --gcp_project, --num_tpu_cores, ..."""
    if _defined("strategy"):
        return
    flags.DEFINE_enum(
        "strategy",
        "one_device",
        list(STRATEGIES),
        "tf.distribute strategy: one_device (first GPU or the CPU), mirrored (all local GPUs, or "
        "--num_cpu_devices logical CPUs), multi_worker_mirrored (cluster from TF_CONFIG), tpu.",
    )
    flags.DEFINE_string("tpu", None, "TPU name or grpc:// address for TPUClusterResolver (--strategy=tpu).")
    flags.DEFINE_alias("tpu_name", "tpu")
    flags.DEFINE_bool("use_tpu", False, "Official flag: same as --strategy=tpu.")
    flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU (TPUClusterResolver).")
    flags.DEFINE_string("gcp_project", None, "GCP project of the TPU (TPUClusterResolver).")
    flags.DEFINE_string("master", None, "Official flag, accepted for compatibility; use --tpu.")
    flags.DEFINE_integer("num_tpu_cores", 8, "Official flag, accepted for compatibility; the TPU system decides.")
    flags.DEFINE_integer(
        "num_cpu_devices", 1, "With --strategy=mirrored and no GPU: split the CPU into this many logical devices."
    )
    flags.DEFINE_enum("all_reduce_alg", None, ["ring", "nccl"], "multi_worker_mirrored collective implementation.")


def define_training_loop_flags(
    steps_per_loop: int = 1000, save_checkpoints_steps: int = 5000, keep_checkpoint_max: int = 5
) -> None:
    """--steps_per_loop (alias --iterations_per_loop), accumulation, precision, XLA, checkpoints, seed."""
    if _defined("steps_per_loop"):
        return
    flags.DEFINE_integer(
        "steps_per_loop", steps_per_loop, "Training steps per host call (inner tf.function loop; TPU speed)."
    )
    flags.DEFINE_alias("iterations_per_loop", "steps_per_loop")
    flags.DEFINE_integer(
        "gradient_accumulation_steps",
        1,
        "Micro-batches of --train_batch_size per optimizer update: the effective batch is "
        "train_batch_size x gradient_accumulation_steps.",
    )
    flags.DEFINE_enum(
        "mixed_precision",
        "float32",
        list(PRECISIONS),
        "Keras dtype policy; mixed_float16 adds dynamic loss scaling. On CPU use float32 (reference/deps.md).",
    )
    flags.DEFINE_bool("jit_compile", False, "Compile the forward/backward pass with XLA.")
    flags.DEFINE_integer("save_checkpoints_steps", save_checkpoints_steps, "Save a checkpoint every this many steps.")
    flags.DEFINE_integer(
        "keep_checkpoint_max", keep_checkpoint_max, "How many recent checkpoints to keep (0 = keep all)."
    )
    flags.DEFINE_integer("seed", 12345, "Seed of model initialisation, dropout and input shuffling.")
    flags.DEFINE_bool(
        "deterministic", False, "tf.config.experimental.enable_op_determinism(): bitwise-reproducible runs."
    )


def define_optimizer_flags(
    optimizer: str = "lamb",
    learning_rate: float = 0.00176,
    num_train_steps: int = 125000,
    num_warmup_steps: int = 3125,
) -> None:
    """--optimizer, --learning_rate, --poly_power, --num_train_steps, --num_warmup_steps, --start_warmup_step."""
    if _defined("optimizer"):
        return
    flags.DEFINE_enum("optimizer", optimizer, ["adamw", "lamb"], "Official AdamWeightDecay or LAMB (spec 3.4).")
    flags.DEFINE_float("learning_rate", learning_rate, "Initial (peak) learning rate.")
    flags.DEFINE_float("poly_power", 1.0, "Power of the polynomial decay to 0.")
    flags.DEFINE_integer("num_train_steps", num_train_steps, "Number of optimizer updates.")
    flags.DEFINE_integer("num_warmup_steps", num_warmup_steps, "Linear warmup steps (the warmup replaces the decay).")
    flags.DEFINE_integer("start_warmup_step", 0, "Step at which warmup starts (earlier steps: negative lr, official).")
    flags.DEFINE_float("weight_decay_rate", 0.01, "Weight decay inside the update (official 0.01).")
    flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon (official 1e-6).")
    flags.DEFINE_float("clip_norm", 1.0, "Global-norm clipping of the global-batch gradient (official 1.0; 0 = off).")


def define_checkpoint_flags() -> None:
    """--init_checkpoint (weights only; distinct from resuming a run in --output_dir)."""
    if _defined("init_checkpoint"):
        return
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "Initialise the model weights from this checkpoint (prefix or directory; official TF1, Hugging Face or "
        "albert-tf). Step 0 and a fresh optimizer. Ignored when --output_dir already holds a checkpoint of this run "
        "(then everything is resumed).",
    )


def define_all_training_flags(**defaults) -> None:
    """Strategy, loop, optimizer and checkpoint flags (defaults forwarded by name)."""
    define_strategy_flags()
    define_training_loop_flags(
        **{k: defaults[k] for k in ("steps_per_loop", "save_checkpoints_steps", "keep_checkpoint_max") if k in defaults}
    )
    define_optimizer_flags(
        **{
            k: defaults[k]
            for k in ("optimizer", "learning_rate", "num_train_steps", "num_warmup_steps")
            if k in defaults
        }
    )
    define_checkpoint_flags()


# ---------------------------------------------------------------------- from flags
def strategy_name_from_flags(flag_values=FLAGS) -> str:
    return "tpu" if flag_values.use_tpu else flag_values.strategy


def strategy_from_flags(flag_values=FLAGS):
    return make_strategy(
        strategy_name_from_flags(flag_values),
        tpu=flag_values.tpu or flag_values.master,
        tpu_zone=flag_values.tpu_zone,
        gcp_project=flag_values.gcp_project,
        num_cpu_devices=flag_values.num_cpu_devices,
        all_reduce_alg=flag_values.all_reduce_alg,
    )


def set_precision_from_flags(flag_values=FLAGS) -> None:
    """Set the global Keras dtype policy (before the model is built)."""
    keras.mixed_precision.set_global_policy(flag_values.mixed_precision)


def optimizer_fn_from_flags(flag_values=FLAGS, num_train_steps: int | None = None, num_warmup_steps: int | None = None):
    """A zero-argument factory (call it inside the strategy scope) for the official optimizer + schedule."""

    def make():
        schedule = WarmupPolynomialDecay(
            init_lr=flag_values.learning_rate,
            num_train_steps=num_train_steps or flag_values.num_train_steps,
            num_warmup_steps=flag_values.num_warmup_steps if num_warmup_steps is None else num_warmup_steps,
            poly_power=flag_values.poly_power,
            start_warmup_step=flag_values.start_warmup_step,
        )
        return create_optimizer(
            flag_values.optimizer,
            schedule,
            weight_decay_rate=flag_values.weight_decay_rate,
            epsilon=flag_values.adam_epsilon,
            clip_norm=flag_values.clip_norm,
            exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
        )

    return make
