"""One split of a built dataset as numpy arrays: what :func:`hier_models.recipes.train`
trains on and :func:`hier_models.recipes.score` scores against.

    import hier_datasets
    from hier_models.splits import load_split

    builder = hier_datasets.build("chopsticks/depth2_either_20000_5000")
    train = load_split(builder, "train")
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

import hier_datasets
from hier_datasets.hierarchy import Hierarchy
from hier_models.progress import progress

__all__ = ["READ_BATCH", "SplitArrays", "load_split"]

#: observations read from TFDS per batch
READ_BATCH = 1024


@dataclasses.dataclass
class SplitArrays:
    """One split of a dataset as numpy arrays, in the stored (``shuffle_files=False``) order.

    ``dataset`` is the dataset's name as for ``tfds.load`` (a resized config
    ``family/config_TRAIN_TEST`` included). ``observations`` are as stored (uint8
    images); ``scale`` maps them to the models' float input in [0, 1]
    (:func:`hier_models.data.observation_scale`: the dataset's recorded maximum),
    None for observations used as they are (floats).
    """

    dataset: str
    split: str
    observations: np.ndarray
    factors: np.ndarray
    active: np.ndarray
    paths: np.ndarray
    hierarchy: Hierarchy
    scale: float | None = None

    def __len__(self) -> int:
        return len(self.factors)

    @property
    def factor_names(self) -> tuple[str, ...]:
        return self.hierarchy.names

    @property
    def family(self) -> str:
        """The dataset family (``chopsticks``, ``spaceshapes``, ``boxhead``)."""
        return self.dataset.partition("/")[0]

    def ground_truth(self):
        """The dataset's generative process (:func:`hier_datasets.ground_truth`)."""
        return hier_datasets.ground_truth(self.dataset)


def load_split(builder, split: str, *, show_progress: bool = True) -> SplitArrays:
    """Read ``split`` of a built dataset (a TFDS builder, e.g. from
    :func:`hier_datasets.build`): observations, factors, activity and paths.

    Raises:
      ValueError: ``split`` is not a split (or a TFDS slice of one) of the dataset.
    """
    import tensorflow_datasets as tfds

    from hier_models.data import observation_scale

    name = f"{builder.name}/{builder.builder_config.name}" if builder.builder_config else builder.name
    try:
        num = builder.info.splits[split].num_examples
        ds = builder.as_dataset(split=split, shuffle_files=False)
    except (KeyError, ValueError, AssertionError) as err:
        raise ValueError(
            f"unknown split {split!r} of {name} ({err}); use train or test, or a TFDS slice such as test[:1000]"
        ) from err
    key = builder.info.supervised_keys[0]
    keys = (key, "factors", "active", "path")
    ds = ds.map(lambda ex: {k: ex[k] for k in keys}).batch(READ_BATCH)
    parts = {k: [] for k in keys}
    bar = progress(tfds.as_numpy(ds), enabled=show_progress, total=math.ceil(num / READ_BATCH),
                   desc=f"reading {name} {split}", unit="batch")
    for batch in bar:
        for k in keys:
            parts[k].append(batch[k])
    arrays = {k: np.concatenate(v) for k, v in parts.items()}
    return SplitArrays(
        dataset=name,
        split=split,
        observations=arrays[key],
        factors=arrays["factors"].astype(np.float64),
        active=arrays["active"].astype(bool),
        paths=arrays["path"].astype(np.int64),
        hierarchy=Hierarchy.from_json(builder.info.metadata["hierarchy"]),
        scale=observation_scale(builder),
    )
