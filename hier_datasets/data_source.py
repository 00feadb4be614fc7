"""Random access to a built dataset, for PyTorch, JAX and Grain: :func:`data_source`.

``tfds.load`` reads the TFRecord files of a dataset as a ``tf.data`` pipeline.
:func:`data_source` gives the same examples, in the same order, as a sequence with
``len``, ``[i]`` and ``__getitems__`` (the batched read PyTorch's DataLoader
uses), each a dict of numpy arrays, read through TFDS's ArrayRecord data source
(``tfds.data_source``) without a ``tf.data`` graph.

TFRecord stays the format that builds write and ``tfds.load`` reads (TFDS 4.9
cannot read ArrayRecord through ``as_dataset``). The first :func:`data_source` of a
dataset version adds an ArrayRecord copy of its shards beside the TFRecord ones
(recorded in the dataset's ``alternative_file_formats``, as TFDS's format conversion
does; it takes about as much disk space again) and says so on stderr; later calls
use it. The conversion holds
the same per-config lock as a build, so concurrent first uses convert once.
"""
from __future__ import annotations

import os
import struct
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hier_datasets.loading import build

__all__ = ["DataSource", "data_source"]

_ARRAY_RECORD = "array_record"


class DataSource(Sequence):
    """The examples of one split of one built dataset version, by index.

    ``source[i]`` is the ``i``-th example of ``tfds.load(name, split=split,
    data_dir=data_dir)`` (files read in order, as ``shuffle_files=False`` does): a
    dict of numpy arrays (``factors``, ``active``, ``path``, the observation, and the
    dataset's extra labels); ``source[a:b]`` is the list of those examples, and
    ``source.__getitems__(indices)`` reads several at once.

    Made by :func:`data_source`. A source pickles as the path of the dataset
    version and the split only, so that it travels to DataLoader or Grain worker
    processes cheaply; each process opens the files on its first read.
    """

    def __init__(self, version_dir: str | os.PathLike, split: str):
        self.version_dir = os.fspath(version_dir)
        self.split = split
        self._source = self._dtypes = None

    def _open(self):
        if self._source is None:
            from hier_datasets._tfds import require_tfds

            builder = require_tfds("reading a built dataset").builder_from_directory(self.version_dir)
            self._dtypes = {name: feature.np_dtype for name, feature in builder.info.features.items()}
            self._source = builder.as_data_source(split=self.split, file_format=_ARRAY_RECORD)
        return self._source

    def _numpy(self, example: dict) -> dict[str, np.ndarray]:
        """Every value as a numpy array of its feature's dtype (scalars as numpy scalars,
        as ``tfds.as_numpy`` gives them)."""
        return {name: np.asarray(value, dtype=self._dtypes[name])[()] for name, value in example.items()}

    def __len__(self) -> int:
        return len(self._open())

    def _index(self, index) -> int:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"index must be an integer or a slice, got {type(index).__name__}")
        n = len(self)
        i = int(index) + n if index < 0 else int(index)
        if not 0 <= i < n:
            raise IndexError(f"index {int(index)} is out of range for a split of {n} examples")
        return i

    def __getitem__(self, index):
        """The example at an integer ``index`` (negative counts from the end), or the
        list of examples of a slice (``source[100:200]``, ``source[::10]``)."""
        if isinstance(index, slice):
            return self.__getitems__(range(len(self))[index])
        return self._numpy(self._open()[self._index(index)])

    def __getitems__(self, indices) -> list[dict[str, np.ndarray]]:
        """The examples at ``indices`` (a sequence of integers), read in one batch."""
        if isinstance(indices, (str, bytes)) or not isinstance(indices, (Sequence, np.ndarray)):
            raise TypeError(f"indices must be a sequence of integers, got {type(indices).__name__}")
        keys = [self._index(i) for i in indices]
        return [self._numpy(example) for example in self._open().__getitems__(keys)] if keys else []

    def read_batch(self, indices) -> dict[str, np.ndarray]:
        """The examples at ``indices`` as one batch: a dict of arrays whose first axis
        runs over ``indices`` (what ``grain.Batch`` or PyTorch's default collation
        makes of them, as numpy arrays), read with one :meth:`__getitems__`.

        For a Grain pipeline that reads a batch at once rather than record by record:
        ``grain.MapDataset.range(len(source)).shuffle(seed=0).batch(256).map(source.read_batch)``.
        """
        examples = self.__getitems__(indices)
        if not examples:
            raise ValueError("read_batch needs at least one index")
        return {name: np.stack([example[name] for example in examples]) for name in examples[0]}

    def __getstate__(self):
        return {"version_dir": self.version_dir, "split": self.split}

    def __setstate__(self, state):
        self.__init__(state["version_dir"], state["split"])

    def __repr__(self) -> str:
        return f"DataSource({self.version_dir!r}, split={self.split!r})"


def _has_array_record(version_dir: Path) -> bool:
    from hier_datasets._tfds import require_tfds

    info = require_tfds("reading a built dataset").builder_from_directory(os.fspath(version_dir)).info
    return _ARRAY_RECORD in {str(getattr(f, "value", f)) for f in info.available_file_formats()}


def _array_record_shards(info) -> list[tuple[Path, Path, int]]:
    """(TFRecord shard, its ArrayRecord copy, examples) for every shard of every split."""
    shards = []
    for split in info.splits.values():
        template = split.filename_template
        copy = template.replace(filetype_suffix=_ARRAY_RECORD)
        for i, length in enumerate(split.shard_lengths):
            shards.append(
                (
                    Path(os.fspath(template.sharded_filepath(shard_index=i, num_shards=split.num_shards))),
                    Path(os.fspath(copy.sharded_filepath(shard_index=i, num_shards=split.num_shards))),
                    int(length),
                )
            )
    return shards


def _tfrecords(path: Path):
    """The records of a TFRecord file, in order, as bytes.

    Each record is framed as its length (8 bytes, little-endian), a checksum of the
    length (4), the record and a checksum of the record (4). The framing is checked
    (every length fits, the file ends after the last record); the CRC-32C checksums
    are not recomputed, which would need TensorFlow (a ``tf.data`` read of the shard
    does; here the file was written by this dataset's own build).
    """
    with open(path, "rb", buffering=1 << 20) as handle:
        while header := handle.read(12):
            if len(header) < 12:
                raise ValueError(f"{path} ends inside a record header: not a complete TFRecord file")
            (length,) = struct.unpack("<Q", header[:8])
            record = handle.read(length)
            if len(record) < length or len(handle.read(4)) < 4:
                raise ValueError(f"{path} ends inside a record: not a complete TFRecord file")
            yield record


def _copy_shard(tfrecord: Path, array_record: Path, length: int) -> None:
    """Write the records of one TFRecord shard, in order, as an ArrayRecord file.

    Reads the TFRecord framing directly (:func:`_tfrecords`; no TensorFlow, whose
    import takes longer than the copy) and writes through TFDS's ArrayRecord adapter
    (the file layout that ``tfds.data_source`` reads). The file appears under its
    name only once complete, with as many examples as the dataset info says.
    """
    from tensorflow_datasets.core import file_adapters

    partial = array_record.with_name(f".{array_record.name}.incomplete-{os.getpid()}")
    written = 0

    def examples():
        nonlocal written
        for record in _tfrecords(tfrecord):
            yield written, record
            written += 1

    try:
        file_adapters.ArrayRecordFileAdapter.write_examples(partial, examples())
        if written != length:
            raise ValueError(f"{tfrecord} holds {written} examples, its dataset info {length}")
        os.replace(partial, array_record)
    finally:
        partial.unlink(missing_ok=True)


def add_array_record(builder) -> None:
    """Give a built dataset version an ArrayRecord copy of its shards, unless it has one.

    Holds the builder's build lock (:attr:`HierarchicalBuilder.build_lock_path`) so
    that concurrent callers convert once; the copy is written beside the TFRecord
    shards, which ``tfds.load`` keeps reading, and recorded in the dataset info's
    ``alternative_file_formats`` (as TFDS's own format conversion does). Says on
    stderr what it does, as it takes a moment (seconds for 100,000 series).
    """
    from hier_datasets.builder import _exclusive

    version_dir = Path(builder.data_dir)
    if _has_array_record(version_dir):
        return
    from hier_datasets._tfds import require_tfds

    tfds = require_tfds("reading a built dataset")
    with _exclusive(builder.build_lock_path):
        if _has_array_record(version_dir):  # converted by another process meanwhile
            return
        shards = _array_record_shards(tfds.builder_from_directory(os.fspath(version_dir)).info)
        size = sum(tfrecord.stat().st_size for tfrecord, _, _ in shards)
        start = time.perf_counter()
        print(
            f"hier_datasets: copying the {len(shards)} TFRecord shard(s) of {builder.info.full_name} "
            f"({sum(n for _, _, n in shards):,} examples, {size / 1e6:.0f} MB) to ArrayRecord for random "
            "access, once for this dataset version (about as much disk space again)",
            file=sys.stderr,
            flush=True,
        )
        for tfrecord, array_record, length in shards:
            _copy_shard(tfrecord, array_record, length)
        info = tfds.core.dataset_info.read_proto_from_builder_dir(version_dir)
        info.alternative_file_formats.append(_ARRAY_RECORD)
        tfds.core.dataset_info.write_dataset_info_proto(info, dataset_info_dir=version_dir)
        print(f"hier_datasets: ArrayRecord copy done in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)


def data_source(name: str, split: str, data_dir: str | os.PathLike | None = None) -> DataSource:
    """Random access to the examples of ``tfds.load(name, split=split, data_dir=data_dir)``.

    Args:
      name: as for :func:`hier_datasets.build`, e.g. ``"chopsticks/depth2_either"``
        or a resized config such as ``"chopsticks/depth2_either_5000_1000"``.
      split: ``"train"``, ``"test"``, or a TFDS split slice such as ``"train[:10%]"``.
      data_dir: the TFDS data dir (default TFDS's own, ``~/tensorflow_datasets``).

    The dataset is built first if it is not there (:func:`hier_datasets.build`) and
    given its ArrayRecord copy on first use (:func:`add_array_record`).

    Raises TypeError for a ``name``, ``split`` or ``data_dir`` of the wrong type,
    ValueError for an unknown split.
    """
    if not isinstance(split, str):
        raise TypeError(f"split must be a split name such as 'train' or 'test[:10%]', got {type(split).__name__}")
    builder = build(name, data_dir)
    known = sorted(builder.info.splits)
    if split.split("[", 1)[0] not in known:
        raise ValueError(f"split {split!r} is not a split of {name!r}; splits: {known}")
    add_array_record(builder)
    return DataSource(builder.data_dir, split)
