"""Build (or reuse) a registered dataset by name.

:func:`build` is the one place that writes a hierbench dataset into a TFDS data dir:
``hierbench build`` and the other commands, and ``hier_models.pipeline``, all go
through it. TensorFlow Datasets is imported when it is called, not before.
"""
from __future__ import annotations

import os

__all__ = ["build"]


def build(name: str, data_dir: str | os.PathLike | None = None, *, download: bool = True):
    """The TFDS builder of the dataset ``name``, with the dataset written to ``data_dir``
    unless it is there already.

    ``name`` is as for ``tfds.load``: ``"chopsticks/depth2_either"``, ``"spaceshapes"``,
    or a resized config of the same process, ``"chopsticks/depth2_either_20000_5000"``
    (:func:`hier_datasets.builder.sized_config`), built on first use. ``data_dir``
    defaults to TFDS's own (``~/tensorflow_datasets``). ``download=False`` returns the
    builder without building (reading it then needs an earlier build).

    Raises TypeError for a name that is not a string, ImportError where
    tensorflow-datasets is not installed.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a dataset name such as 'chopsticks/depth2_either', got {type(name).__name__}")
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path or None, got {type(data_dir).__name__}")
    if not isinstance(download, bool):
        raise TypeError(f"download must be True or False, got {download!r}")
    from hier_datasets._tfds import tfds

    if tfds is None:
        raise ImportError("building a dataset needs tensorflow-datasets; pip install tensorflow-datasets")
    builder = tfds.builder(name, data_dir=None if data_dir is None else os.fspath(data_dir))
    if download:
        builder.download_and_prepare()
    return builder
