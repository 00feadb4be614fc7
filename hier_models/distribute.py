"""Training on several devices or machines with ``tf.distribute``.

Every model trains under ``tf.distribute.MirroredStrategy`` (the GPUs of one machine)
and ``tf.distribute.MultiWorkerMirroredStrategy`` (several machines, described by the
``TF_CONFIG`` environment variable) as it does on one device on the same global
batches::

    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = hier_models.BetaTCVAE((64, 64, 3))
        model.compile(optimizer=keras.optimizers.Adam(1e-4))
    model.fit(dataset_of_global_batches, epochs=10)

Keras splits each global batch of N rows over the R replicas (replica r gets n_r
consecutive rows, starting at row o_r) and sums the replicas' gradients; it scales
only its own built-in losses for that. The models do the rest here:

- **loss scaling**: every loss term is a mean over a replica's own rows, and a
  replica differentiates it weighted by ``n_r / N`` (:attr:`BatchShare.fraction`),
  so the summed gradient is the gradient of the mean over the global batch (also
  for a last batch that does not split evenly; Keras's ``1 / R`` would not be);
- **whole-batch statistics** are gathered from every replica with the
  differentiable ``ReplicaContext.all_gather``: beta-TCVAE's estimate of the
  aggregate posterior (Chen et al. 2018, section 4.1) takes its pairs over all N
  codes, and the TC discriminators (Kim & Mnih 2018, algorithm 2; Ross & Doshi-Velez
  2021, section 5.2) permute dimensions across the global batch;
- **sampling noise**: a replica's noise is its rows of the noise one device draws
  for the global batch (the models' noise is a stateless function of the seed, the
  step and the batch shape), so R replicas draw what one device would;
- **batch normalisation** (the Boxhead architectures) synchronises its statistics
  across replicas when the networks are built under a strategy with several.

The step counter, the metrics and both optimisers (the main one and a
discriminator's) are created inside the model's strategy scope by ``compile``,
which also rebuilds an optimiser that was created outside it (before any step).
"""
from __future__ import annotations

import contextlib
import dataclasses

import tensorflow as tf

__all__ = [
    "STRATEGIES",
    "BatchShare",
    "batch_share",
    "gather_rows",
    "get_strategy",
    "in_scope",
    "is_chief",
    "local_rows",
    "multi_worker",
    "step_outputs",
    "synchronised",
]

#: names of the strategies ``get_strategy`` (and ``hierbench --strategy``) creates
STRATEGIES = ("mirrored", "multiworker")

_CREATED: dict = {}


@dataclasses.dataclass(frozen=True)
class BatchShare:
    """One replica's rows of a global batch: rows ``offset .. offset + size`` of
    ``total`` (int32 scalar tensors)."""

    offset: tf.Tensor
    size: tf.Tensor
    total: tf.Tensor

    @property
    def fraction(self) -> tf.Tensor:
        """``size / total`` (float32): the weight of this replica's batch means."""
        return tf.cast(self.size, tf.float32) / tf.cast(tf.maximum(self.total, 1), tf.float32)


def batch_share(size) -> BatchShare | None:
    """Where this replica's ``size`` rows lie in the global batch, or None when
    there is a single replica (no strategy, or a strategy with one device).

    Called in a replica context (a ``train_step``); the sizes of all replicas are
    gathered, so replicas with uneven shares (a last batch of 5 rows on 2 replicas
    is split 3 + 2) are placed exactly.
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None
    size = tf.cast(size, tf.int32)
    sizes = context.all_gather(tf.reshape(size, [1]), axis=0)
    before = tf.range(context.num_replicas_in_sync) < tf.cast(context.replica_id_in_sync_group, tf.int32)
    offset = tf.reduce_sum(tf.where(before, sizes, tf.zeros_like(sizes)))
    return BatchShare(offset=offset, size=size, total=tf.reduce_sum(sizes))


def gather_rows(values, share: BatchShare | None):
    """The global batch of ``values`` (this replica's rows first dimension): the
    rows of every replica in replica order; ``values`` itself on a single replica.

    Differentiable: the gradient each replica receives for its own rows is the sum
    over replicas of the gradients with respect to those rows of the global batch.
    """
    if share is None:
        return values
    return tf.distribute.get_replica_context().all_gather(values, axis=0)


def local_rows(values, share: BatchShare | None):
    """This replica's rows of a global-batch tensor (all of it on a single replica)."""
    if share is None:
        return values
    return values[share.offset : share.offset + share.size]


def synchronised() -> bool:
    """True inside the scope of a strategy with more than one replica: networks
    built now synchronise their batch-normalisation statistics across replicas."""
    return tf.distribute.has_strategy() and tf.distribute.get_strategy().num_replicas_in_sync > 1


def multi_worker(strategy) -> bool:
    """Whether ``strategy`` is a ``MultiWorkerMirroredStrategy`` over several workers."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return False
    in_mode = getattr(strategy.extended, "_in_multi_worker_mode", None)
    return bool(in_mode()) if in_mode is not None else True


def step_outputs(logs: dict, strategy) -> dict:
    """A train or test step's metric values as Keras can reduce them across workers.

    Keras 3 averages a multi-worker step's outputs along their first axis, which a
    scalar lacks ("Invalid reduction dimension 0 for input with 0 dimensions",
    tensorflow/tensorflow#72388): there, each value is given shape (1,). Elsewhere
    they are returned as they are.
    """
    if not multi_worker(strategy):
        return logs
    return {name: tf.reshape(value, [1]) for name, value in logs.items()}


def get_strategy(name: str | None):
    """The strategy called ``name``: ``"mirrored"`` (``MirroredStrategy`` over every
    local GPU, or the CPU), ``"multiworker"`` (``MultiWorkerMirroredStrategy``, the
    cluster from ``TF_CONFIG``; without it, this machine alone), or None for none.

    A process creates each strategy once (TensorFlow configures a multi-worker
    strategy's collectives only once per process, before it runs any operation);
    later calls return the same object.
    """
    if name is None:
        return None
    if name not in STRATEGIES:
        raise ValueError(f"strategy must be one of {list(STRATEGIES)} or None, got {name!r}")
    if name not in _CREATED:
        if name == "mirrored":
            _CREATED[name] = tf.distribute.MirroredStrategy()
        else:
            _CREATED[name] = tf.distribute.MultiWorkerMirroredStrategy()
    return _CREATED[name]


def in_scope(strategy):
    """``strategy.scope()``, or a context that does nothing for None."""
    return contextlib.nullcontext() if strategy is None else strategy.scope()


def is_chief(strategy) -> bool:
    """Whether this process writes results: always, except for the workers of a
    multi-worker cluster other than its chief (task ``chief``, else ``worker`` 0)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None:
        return True
    cluster = resolver.cluster_spec().as_dict()
    if not cluster or resolver.task_type is None:
        return True
    if resolver.task_type == "chief":
        return True
    return resolver.task_type == "worker" and int(resolver.task_id or 0) == 0 and "chief" not in cluster
