"""The TFDS builder shared by every hierbench dataset.

A builder is thin: it asks the dataset's :class:`~hier_datasets.GroundTruth` for
factors and observations and writes them with their labels. Each split is drawn
from its own fixed seed (a CRC32 of ``family/config/split``) in one process, so the
same version and config give the same bytes on every machine.
"""
from __future__ import annotations

import dataclasses
import re
import zlib
from pathlib import Path

import numpy as np
import tensorflow_datasets as tfds

from hier_datasets.ground_truth import GroundTruth, ground_truth

#: rows rendered at a time while writing a split
CHUNK = 2048


@dataclasses.dataclass(eq=False)
class HierarchicalConfig(tfds.core.BuilderConfig):
    """A dataset config: split sizes and keyword options for the ground truth.

    ``process`` names the ground-truth config (``family/process``) when it differs
    from the config's own name, as for the resized configs of :func:`sized_config`.
    """

    train_size: int = 0
    test_size: int = 0
    options: dict = dataclasses.field(default_factory=dict)
    process: str = ""


def sized_config(process: str, train_size: int, test_size: int) -> HierarchicalConfig:
    """A config of the same process with other split sizes, e.g. for quick experiments.

    It is named ``{process}_{train_size}_{test_size}`` so that it never shares a
    folder with the full-size config::

        tfds.builder("chopsticks", config=sized_config("depth2_either", 1000, 200))
    """
    for name, value in (("train_size", train_size), ("test_size", test_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return HierarchicalConfig(
        name=f"{process}_{train_size}_{test_size}",
        description=f"{process} with {train_size} / {test_size} examples.",
        train_size=train_size,
        test_size=test_size,
        process=process,
    )


def split_seed(family: str, config: str, split: str) -> int:
    """The fixed seed of one split of one config."""
    return zlib.crc32(f"{family}/{config}/{split}".encode())


_SIZED_NAME = re.compile(r"(?P<process>.+)_(?P<train>[0-9]+)_(?P<test>[0-9]+)")


def parse_sized_name(config: str) -> tuple[str, int, int] | None:
    """``(process, train_size, test_size)`` of a :func:`sized_config` name such as
    ``depth2_either_5000_1000``, or None when ``config`` has no size suffix."""
    match = _SIZED_NAME.fullmatch(config)
    return None if match is None else (match["process"], int(match["train"]), int(match["test"]))


class HierarchicalBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Base builder: features ``<observation>``, ``factors``, ``active``, ``path``.

    Subclasses set ``name`` (also the :func:`ground_truth` family), ``VERSION`` and
    ``BUILDER_CONFIGS`` of :class:`HierarchicalConfig`; TFDS reads the ``README.md``
    and ``CITATIONS.bib`` beside the subclass's module. A config
    name ``{config}_{train}_{test}`` (e.g. ``tfds.load("chopsticks/depth2_either_5000_1000")``)
    is the :func:`sized_config` of a registered config.
    """

    def _create_builder_config(self, builder_config, version):
        if isinstance(builder_config, str) and builder_config not in self.builder_configs:
            sized = parse_sized_name(builder_config)
            if sized and sized[0] in self.builder_configs:
                builder_config = sized_config(*sized)
        return super()._create_builder_config(builder_config, version)

    @property
    def ground_truth(self) -> GroundTruth:
        """The generative process that this builder writes."""
        cfg = self.builder_config
        return ground_truth(f"{self.name}/{self._process}", **cfg.options)

    @property
    def _process(self) -> str:
        return self.builder_config.process or self.builder_config.name

    def download_and_prepare(self, *args, **kwargs):
        """Build the dataset; after a failure no folder of this config is left behind.

        TFDS writes into a temporary folder that it renames on success and deletes
        on failure; this also removes the config folder that it leaves empty.
        """
        try:
            return super().download_and_prepare(*args, **kwargs)
        except BaseException:
            config_dir = Path(self.data_dir).parent
            if config_dir.is_dir() and not any(config_dir.iterdir()):
                config_dir.rmdir()
            raise

    def _info(self) -> tfds.core.DatasetInfo:
        gt = self.ground_truth
        k = gt.num_factors
        if gt.observation_dtype == np.uint8 and len(gt.observation_shape) == 3:
            observation = tfds.features.Image(shape=gt.observation_shape)
        else:
            observation = tfds.features.Tensor(shape=gt.observation_shape, dtype=gt.observation_dtype)
        features = {
            gt.observation_name: observation,
            "factors": tfds.features.Tensor(shape=(k,), dtype=np.float32),
            "active": tfds.features.Tensor(shape=(k,), dtype=np.bool_),
            "path": tfds.features.Scalar(dtype=np.int64),
        }
        for name, (shape, dtype) in gt.label_specs.items():
            features[name] = tfds.features.Tensor(shape=shape, dtype=dtype)
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(features),
            supervised_keys=(gt.observation_name, "factors"),
            metadata=tfds.core.MetadataDict(gt.metadata()),
        )

    def _split_generators(self, dl_manager):
        cfg = self.builder_config
        return {"train": self._generate_examples("train", cfg.train_size), "test": self._generate_examples("test", cfg.test_size)}

    def _generate_examples(self, split: str, size: int):
        gt = self.ground_truth
        rng = np.random.default_rng(split_seed(self.name, self._process, split))
        factors = gt.sample_factors(size, rng)
        labels = {"active": gt.active(factors), "path": gt.paths(factors), **gt.extra_labels(factors)}
        for lo in range(0, size, CHUNK):
            obs = gt.observations_from_factors(factors[lo : lo + CHUNK], rng)
            for i, x in enumerate(obs, start=lo):
                example = {gt.observation_name: x, "factors": factors[i]}
                example.update({name: values[i] for name, values in labels.items()})
                yield i, example
