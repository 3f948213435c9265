"""Build the tf.distribute strategy named by ``--strategy`` (nothing home-made).

* ``one_device``: ``OneDeviceStrategy`` on the first GPU, else the CPU.
* ``mirrored``: ``MirroredStrategy`` over all local GPUs; with ``num_cpu_devices > 1`` and no GPU,
  over that many logical CPU devices (a cheap way to exercise cross-replica code on a laptop/CI).
* ``multi_worker_mirrored``: ``MultiWorkerMirroredStrategy``; the cluster comes from ``TF_CONFIG``.
* ``tpu``: ``TPUStrategy`` with ``TPUClusterResolver(tpu=--tpu, zone, project)``: ``--tpu=NAME`` (a Cloud TPU
  node or pod by name, or a ``grpc://`` address) connects to its workers first; ``--tpu=local`` (a TPU VM, and
  Colab's TPU runtime) and an unset ``--tpu`` whose resolver finds no remote master use the TPU chips of this host
  without connecting (as Model Garden's ``tpu_initialize``). Not run on a real TPU here (no TPU in CI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert_tf.training.run_config import STRATEGIES, RunError

if TYPE_CHECKING:
    import tensorflow as tf



def ensure_logical_cpus(n: int) -> list[str]:
    """Split the physical CPU into ``n`` logical devices (must run before TF initialises devices)."""
    import tensorflow as tf

    cpus = tf.config.list_physical_devices("CPU")
    current = tf.config.get_logical_device_configuration(cpus[0])
    if n > 1 and (current is None or len(current) != n):
        try:
            tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * n)
        except RuntimeError as e:
            raise RuntimeError(
                f"cannot split the CPU into {n} logical devices: TensorFlow devices were already initialised ({e})"
            ) from None
    return [d.name for d in tf.config.list_logical_devices("CPU")]


def make_strategy(
    name: str = "one_device",
    *,
    tpu: str | None = None,
    tpu_zone: str | None = None,
    gcp_project: str | None = None,
    num_cpu_devices: int = 1,
    all_reduce_alg: str | None = None,
) -> tf.distribute.Strategy:
    """The strategy for ``--strategy`` (see module docstring)."""
    import tensorflow as tf

    if name not in STRATEGIES:
        raise ValueError(f"--strategy must be one of {', '.join(STRATEGIES)}, got {name!r}")
    if name == "tpu":
        return _tpu_strategy(tpu, tpu_zone, gcp_project)
    if name == "multi_worker_mirrored":
        options = None
        if all_reduce_alg:
            impl = {
                "ring": tf.distribute.experimental.CommunicationImplementation.RING,
                "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
            }[all_reduce_alg]
            options = tf.distribute.experimental.CommunicationOptions(implementation=impl)
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    gpus = tf.config.list_physical_devices("GPU")
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    if gpus:
        return tf.distribute.MirroredStrategy()
    devices = ensure_logical_cpus(num_cpu_devices)[: max(1, num_cpu_devices)]
    if len(devices) == 1:
        return tf.distribute.MirroredStrategy(devices)
    return tf.distribute.MirroredStrategy(devices, cross_device_ops=tf.distribute.ReductionToOneDevice())


def _tpu_strategy(tpu: str | None, zone: str | None, project: str | None) -> tf.distribute.Strategy:
    """``TPUStrategy`` on the named TPU (``local`` on a TPU VM); a TPU that does not answer is one clear error."""
    import tensorflow as tf

    where = f"--tpu={tpu}" if tpu else "--tpu unset (TPU_NAME / the Colab TPU runtime)"
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "", zone=zone, project=project)
        if connects_to_cluster(tpu, resolver):
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, OSError, tf.errors.OpError) as e:
        message = (getattr(e, "message", None) or str(e) or type(e).__name__).strip().splitlines()[0]
        raise RunError(f"--strategy=tpu, {where}: no TPU answered ({message[:300]})") from None
    return tf.distribute.TPUStrategy(resolver)


def connects_to_cluster(tpu: str | None, resolver) -> bool:
    """A remote TPU (named, or an address) needs ``experimental_connect_to_cluster``; the chips of this host
    (``--tpu=local`` on a TPU VM, or no name and no remote master) must not be connected to."""
    if tpu == "local":
        return False
    return bool(tpu) or bool(resolver.master())


def worker_info(strategy: tf.distribute.Strategy) -> tuple[int, int]:
    """(this worker's index, number of workers); (0, 1) for single-host strategies."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.cluster_spec().as_dict():
        return 0, 1
    spec = resolver.cluster_spec().as_dict()
    workers = len(spec.get("worker", [])) + len(spec.get("chief", []))
    task_type, task_id = resolver.task_type, resolver.task_id or 0
    index = task_id + (1 if task_type == "worker" and "chief" in spec else 0)
    return index, max(1, workers)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that writes summaries, results and checkpoints (as the chief)."""
    return worker_info(strategy)[0] == 0
