"""Dataset names and loading for the command line.

Datasets are named as for ``tfds.load`` (``chopsticks/depth2_either``,
``spaceshapes``); a name ending in ``_TRAIN_TEST`` (``chopsticks/depth2_either_20000_5000``)
is a resized config of the same process (:func:`hier_datasets.builder.sized_config`),
built on first use by :func:`hier_datasets.build`.
"""
from __future__ import annotations

import dataclasses

import numpy as np

import hier_datasets
from hier_datasets.ground_truth import parse_sized_name
from hier_datasets.hierarchy import Hierarchy
from hier_models import splits
from hier_models.splits import SplitArrays
from hierbench.errors import CommandError

__all__ = [
    "DatasetRef",
    "dataset_names",
    "load_split",
    "path_table",
    "prepare",
    "resolve_dataset",
]

def _families() -> dict[str, list[str]]:
    """Registered dataset families and their config names."""
    import tensorflow_datasets as tfds

    out = {}
    for family in hier_datasets.available():
        configs = getattr(tfds.builder_cls(family), "BUILDER_CONFIGS", [])
        out[family] = [c.name for c in configs]
    return out


def dataset_names() -> list[str]:
    """Every registered dataset as ``family/config``."""
    return [f"{family}/{config}" for family, configs in _families().items() for config in configs]


@dataclasses.dataclass(frozen=True)
class DatasetRef:
    """A registered dataset, optionally resized: ``family/config[_TRAIN_TEST]``."""

    family: str
    config: str
    train_size: int | None = None
    test_size: int | None = None

    @property
    def name(self) -> str:
        """The name for ``tfds.load`` (once built)."""
        sized = f"_{self.train_size}_{self.test_size}" if self.train_size else ""
        return f"{self.family}/{self.config}{sized}"

    @property
    def process(self) -> str:
        """The generative process, as for ``hier_datasets.ground_truth``."""
        return f"{self.family}/{self.config}"

    def ground_truth(self):
        return hier_datasets.ground_truth(self.process)


def resolve_dataset(name: str, train_size: int | None = None, test_size: int | None = None) -> DatasetRef:
    """The :class:`DatasetRef` named ``name``, resized to ``train_size`` / ``test_size`` if given."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a dataset name such as 'chopsticks/depth2_either', got {type(name).__name__}")
    families = _families()
    family, _, config = name.partition("/")
    hint = f"choose from {', '.join(dataset_names())} (optionally with a _TRAIN_TEST size suffix)"
    if family not in families:
        raise CommandError(f"unknown dataset {name!r}; {hint}")
    config = config or families[family][0]
    sized = parse_sized_name(config)
    if sized and sized[0] in families[family]:
        config = sized[0]
        if train_size is None and test_size is None:
            train_size, test_size = sized[1:]
    if config not in families[family]:
        raise CommandError(f"unknown dataset {name!r}; {hint}")
    if (train_size is None) != (test_size is None):
        raise CommandError("give both --train-size and --test-size, or neither")
    for what, value in (("train size", train_size), ("test size", test_size)):
        if value is not None and value < 1:
            raise CommandError(f"{what} must be a positive number of examples, got {value}")
    return DatasetRef(family, config, train_size, test_size)


def prepare(dataset: DatasetRef, data_dir: str | None = None):
    """Build (or reuse) ``dataset`` in the TFDS data dir; returns its builder."""
    return hier_datasets.build(dataset.name, data_dir)


def load_split(builder, split: str, *, show_progress: bool = True) -> SplitArrays:
    """:func:`hier_models.splits.load_split`, an unknown split a :class:`CommandError`."""
    try:
        return splits.load_split(builder, split, show_progress=show_progress)
    except ValueError as err:
        raise CommandError(str(err)) from err


def _path_counts(builder, split: str, num_paths: int) -> np.ndarray:
    """Number of examples of ``split`` on each path (images are not decoded)."""
    import tensorflow_datasets as tfds

    skip = {name: tfds.decode.SkipDecoding() for name, f in builder.info.features.items()
            if isinstance(f, tfds.features.Image)}
    ds = builder.as_dataset(split=split, decoders=skip or None).map(lambda ex: ex["path"]).batch(65536)
    paths = np.concatenate(list(tfds.as_numpy(ds)))
    return np.bincount(paths, minlength=num_paths)


def path_table(builder) -> list[tuple[str, str, int, int]]:
    """Rows (path, active factors, train count, test count) of a built dataset."""
    hierarchy = Hierarchy.from_json(builder.info.metadata["hierarchy"])
    train, test = (_path_counts(builder, split, hierarchy.num_paths) for split in ("train", "test"))
    return [
        (hierarchy.path_names[p], ", ".join(hierarchy.active_dims(p)), int(train[p]), int(test[p]))
        for p in range(hierarchy.num_paths)
    ]
