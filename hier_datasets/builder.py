"""The TFDS builder shared by every hierbench dataset.

A builder is thin: it asks the dataset's :class:`~hier_datasets.GroundTruth` for
factors and observations and writes them with their labels. The factors of a split
are drawn from its own fixed seed (a CRC32 of ``family/config/split``,
:func:`~hier_datasets.generation.split_seed`); its examples are then made in chunks
of :data:`~hier_datasets.generation.CHUNK` rows, chunk ``c`` drawing its observation
noise (if any) from the seed ``[split_seed, c]``
(:func:`~hier_datasets.generation.chunk_examples`). A chunk depends on nothing but those
seeds, so the same version and config give the same examples whether the chunks
are made one after the other in one process (the plain build) or spread over the
workers of an Apache Beam pipeline (:mod:`hier_datasets.beam_build`), on every
machine. (The record bytes can differ where protobuf writes an example's features in
another order, as protobuf 6, which Apache Beam requires, does from process to
process; the decoded examples do not.)

Building is safe for several processes sharing one data dir: preparation holds an
exclusive file lock per config and version, a process that waited for it reuses the
finished build, and the ``incomplete.*`` folder of an interrupted build is removed
before the next one starts (:meth:`HierarchicalBuilder.download_and_prepare`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import shutil
from pathlib import Path

import numpy as np
import tensorflow_datasets as tfds

from hier_datasets.generation import CHUNK, chunk_examples, split_factors, split_seed
from hier_datasets.ground_truth import GroundTruth, ground_truth, parse_sized_name

try:  # POSIX file locks; elsewhere builds of one config must not overlap
    import fcntl
except ImportError:  # pragma: no cover  (Windows)
    fcntl = None



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


@contextlib.contextmanager
def _exclusive(lock_path: Path):
    """Hold an exclusive ``flock`` on ``lock_path`` (created if missing).

    The kernel releases the lock when its process ends, however it ends, so a killed
    build never leaves a lock behind; the (empty) lock file itself stays.
    """
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "ab") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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
                # a resized config made by name: TFDS would warn "Using custom data
                # configuration" with the whole config, which nobody needs to act on
                return sized_config(*sized)
        return super()._create_builder_config(builder_config, version)

    def is_prepared(self) -> bool:
        """As TFDS's, without its warning that a version folder not built yet has no
        ``dataset_info.json`` (``tfds.load`` asks before it builds)."""
        return Path(self.data_path).is_dir() and super().is_prepared()

    @property
    def ground_truth(self) -> GroundTruth:
        """The generative process that this builder writes."""
        cfg = self.builder_config
        return ground_truth(f"{self.name}/{self._process}", **cfg.options)

    @property
    def _process(self) -> str:
        return self.builder_config.process or self.builder_config.name

    #: ground-truth options in a Beam worker, e.g. Boxhead's one rendering process (one scene) per worker
    BEAM_WORKER_OPTIONS: dict = {}

    @property
    def build_lock_path(self) -> Path:
        """The lock file of this config and version: ``{data_dir}/{name}/.{config}-{version}.lock``.

        It lies beside the config's folder (not in it), so that a failed build can
        remove the folder and TFDS never mistakes the file for a version.
        """
        config_dir = Path(self.data_path).parent
        return config_dir.parent / f".{config_dir.name}-{Path(self.data_path).name}.lock"

    def download_and_prepare(self, *args, **kwargs):
        """Build the dataset, or reuse it when it is there.

        Safe for processes that share a data dir: preparation holds an exclusive file
        lock (:attr:`build_lock_path`) on POSIX systems and local or network file
        systems (a ``gs://``-style data dir takes no lock); a process that waited while
        another built the same config and version reads and reuses that build. Under
        the lock, ``incomplete.*`` folders of this version are left over from an
        interrupted build and are removed first. TFDS writes into a temporary folder
        that it renames on success and deletes on failure; after a failure this also
        removes the config folder that it leaves empty.

        With ``download_config=tfds.download.DownloadConfig(beam_options=...)`` (or
        ``beam_runner``), as ``tfds build --beam_pipeline_options=...`` passes, the
        examples are generated on Apache Beam (:mod:`hier_datasets.beam_build`);
        they are the same examples as without.
        """
        config = kwargs.get("download_config")
        overwrite = config is not None and config.download_mode.overwrite_dataset
        data_path = Path(self.data_path)
        if (data_path.exists() and not overwrite) or "://" in str(self.data_path):
            return super().download_and_prepare(*args, **kwargs)
        with _exclusive(self.build_lock_path):
            if data_path.exists() and not overwrite:  # another process built it while this one waited
                self.info.read_from_directory(self.data_dir)
                return None
            for stale in data_path.parent.glob(f"incomplete.*_{data_path.name}"):
                shutil.rmtree(stale, ignore_errors=True)
            try:
                return super().download_and_prepare(*args, **kwargs)
            except BaseException:
                config_dir = data_path.parent
                if config_dir.is_dir() and not any(config_dir.iterdir()):
                    config_dir.rmdir()
                raise

    def _download_and_prepare(self, dl_manager, download_config):
        self._beam = download_config.beam_runner is not None or download_config.beam_options is not None
        if self._beam:
            from hier_datasets.beam_build import local_runner  # Apache Beam: only for Beam builds

            download_config = local_runner(download_config)
        try:
            return super()._download_and_prepare(dl_manager, download_config)
        finally:
            self._beam = False

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
        sizes = {"train": cfg.train_size, "test": cfg.test_size}
        if getattr(self, "_beam", False):
            from hier_datasets.beam_build import GenerateSplit  # Apache Beam: only for Beam builds

            options = {**cfg.options, **self.BEAM_WORKER_OPTIONS}
            return {split: GenerateSplit(self.name, self._process, options, split, size) for split, size in sizes.items()}
        return {split: self._generate_examples(split, size) for split, size in sizes.items()}

    def _generate_examples(self, split: str, size: int):
        gt = self.ground_truth
        factors = split_factors(gt, self.name, self._process, split, size)
        seed = split_seed(self.name, self._process, split)
        for start in range(0, size, CHUNK):
            yield from chunk_examples(gt, factors, start, seed)
