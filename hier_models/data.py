"""Training and evaluation input pipelines over the TFDS datasets.

:func:`pipeline` turns ``tfds.load(name, split=split)`` into batches of float32
observations ready for ``model.fit`` and ``model.encode``:

- uint8 images are divided by the largest value the dataset stores, so they lie in
  [0, 1]: Spaceshapes stores 0/1 pixels (divided by 1, *not* 255), RGB datasets such
  as Boxhead store 0..255 (divided by 255). The maximum comes from
  ``info.metadata["observation_max"]``, which the hierbench builders record, else
  from the dtype (255 for uint8); ``max_value=`` overrides it;
- float observations (Chopsticks series) are passed through as stored.

Shuffling (of the files and of the examples) is seeded, so the same ``random_state`` gives
the same batches in the same order, epoch after epoch.

Reading TFDS records is the slow part (about 5,000-20,000 examples/s on two CPU
cores). A split whose stored examples take at most :data:`CACHE_LIMIT_BYTES` is
therefore read once, when the pipeline is made, and kept in memory (``cache="auto"``):
Chopsticks (23 MB) and Spaceshapes (221 MB as uint8) are, Boxhead (1.2 GB) is not.
An in-memory split is shuffled completely, by a fresh permutation of its row indices
every epoch, and batched by gathering rows, so it streams at millions of examples/s;
a streamed split is shuffled through a buffer of ``shuffle_buffer`` examples.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

import hier_datasets
from hier_datasets.validation import check_seed

__all__ = ["CACHE_LIMIT_BYTES", "observation_scale", "pipeline"]

#: ``cache="auto"`` keeps a split in memory when its stored examples take at most this.
CACHE_LIMIT_BYTES = 512 * 2**20


def _split_bytes(info: tfds.core.DatasetInfo, split: str, keys) -> int:
    """Bytes of the features ``keys`` over the examples of ``split`` (as stored, decoded)."""
    per_example = 0
    for key in keys:
        feature = info.features[key]
        per_example += int(np.prod(feature.shape)) * np.dtype(feature.np_dtype).itemsize
    return per_example * int(info.splits[split].num_examples)


def observation_scale(builder: tfds.core.DatasetBuilder, max_value=None) -> float | None:
    """Factor that maps the stored observations to [0, 1], or None (floats: as stored)."""
    info = builder.info
    key = info.supervised_keys[0]
    dtype = np.dtype(info.features[key].np_dtype)
    if not np.issubdtype(dtype, np.integer):
        if max_value is not None:
            raise ValueError(f"max_value applies to integer observations; {builder.name!r} stores {dtype}")
        return None
    if max_value is None:
        max_value = info.metadata.get("observation_max") if info.metadata else None
    if max_value is None:
        max_value = np.iinfo(dtype).max
    if isinstance(max_value, bool) or not isinstance(max_value, (int, float, np.number)) or max_value <= 0:
        raise ValueError(f"max_value must be a positive number, got {max_value!r}")
    return 1.0 / float(max_value)


def pipeline(
    name: str,
    split: str = "train",
    batch_size: int = 64,
    *,
    data_dir: str | None = None,
    random_state: int = 0,
    shuffle: bool = True,
    with_factors: bool = False,
    shuffle_buffer: int = 10_000,
    drop_remainder: bool = False,
    repeat: bool = False,
    cache: bool | str = "auto",
    max_value: float | None = None,
    download: bool = True,
) -> tf.data.Dataset:
    """A batched, prefetched ``tf.data`` pipeline of float32 observations.

    ``name`` and ``split`` are as for ``tfds.load`` (e.g. ``"chopsticks/depth2_either"``,
    ``"train[:10%]"``). Yields observation batches, or ``(observation, factors)``
    pairs with ``with_factors=True``. ``shuffle`` reshuffles the examples every epoch
    from ``random_state`` (an integer seed or a numpy Generator); ``shuffle=False`` keeps the stored order (for evaluation).
    ``repeat`` repeats forever. ``cache=True`` reads the split into memory now
    (``"auto"``: when it takes at most :data:`CACHE_LIMIT_BYTES`), ``False`` streams it
    from the records, shuffling through a buffer of ``shuffle_buffer`` examples.
    ``max_value`` overrides the image scale (see the module doc). The dataset is built
    on first use (:func:`hier_datasets.build`) unless ``download=False``.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if isinstance(shuffle_buffer, bool) or not isinstance(shuffle_buffer, (int, np.integer)) or shuffle_buffer < 1:
        raise ValueError(f"shuffle_buffer must be an integer >= 1, got {shuffle_buffer!r}")
    seed = check_seed(random_state)
    builder = hier_datasets.build(name, data_dir, download=bool(download))
    info = builder.info
    if info.supervised_keys is None:
        raise ValueError(f"dataset {name!r} declares no (observation, label) keys")
    keys = tuple(info.supervised_keys[:2]) if with_factors else (info.supervised_keys[0],)
    scale = observation_scale(builder, max_value)
    if cache == "auto":
        cache = _split_bytes(info, split, keys) <= CACHE_LIMIT_BYTES
    elif not isinstance(cache, bool):
        raise ValueError(f"cache must be True, False or 'auto', got {cache!r}")
    options = dict(shuffle=shuffle, seed=seed, repeat=repeat, drop_remainder=drop_remainder)
    if cache:
        ds = _in_memory(builder, split, keys, int(batch_size), **options)
    else:
        ds = _streamed(builder, split, keys, int(batch_size), shuffle_buffer=int(shuffle_buffer), **options)

    def to_float(x, *factors):
        x = tf.cast(x, tf.float32)
        x = x * scale if scale is not None else x
        return (x, *factors) if factors else x

    ds = ds.map(to_float, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def _streamed(builder, split, keys, batch_size, *, shuffle, seed, repeat, drop_remainder, shuffle_buffer):
    """Batches read from the TFDS records, shuffled through a buffer."""
    read_config = tfds.ReadConfig(shuffle_seed=seed)
    ds = builder.as_dataset(split=split, shuffle_files=shuffle, read_config=read_config)
    ds = ds.map(lambda ex: tuple(ex[k] for k in keys), num_parallel_calls=tf.data.AUTOTUNE)
    if shuffle:
        size = int(ds.cardinality())
        ds = ds.shuffle(min(shuffle_buffer, size) if size > 0 else shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    return ds.batch(batch_size, drop_remainder=drop_remainder)


def _in_memory(builder, split, keys, batch_size, *, shuffle, seed, repeat, drop_remainder):
    """Batches gathered from the whole split held in memory, in a new order every epoch."""
    arrays = tfds.as_numpy(builder.as_dataset(split=split, batch_size=-1, shuffle_files=False))
    with tf.device("/cpu:0"):  # tf.data runs on the CPU; keep the rows there
        columns = [tf.Variable(arrays[k], trainable=False, name=f"pipeline_{k}") for k in keys]
    n = int(columns[0].shape[0])
    if n == 0:
        raise ValueError(f"split {split!r} of {builder.name!r} is empty")
    full = n // batch_size * batch_size

    def epoch(epoch_seed):
        order = tf.range(n, dtype=tf.int64)
        if shuffle:
            order = tf.cast(tf.argsort(tf.random.stateless_uniform([n], seed=epoch_seed)), tf.int64)
        batches = tf.data.Dataset.from_tensor_slices(tf.reshape(order[:full], (-1, batch_size)))
        if full < n and not drop_remainder:
            batches = batches.concatenate(tf.data.Dataset.from_tensors(order[full:]))
        return batches

    # one seed per epoch: a new sequence each time the dataset is iterated, the same
    # sequence for the same seed
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    ds = (seeds if repeat else seeds.take(1)).flat_map(epoch)

    def gather(rows):
        return tuple(tf.gather(column, rows) for column in columns)

    return ds.map(gather, num_parallel_calls=tf.data.AUTOTUNE)
