"""Build (or reuse) a registered dataset by name.

:func:`build` is the one place that writes a hierbench dataset into a TFDS data dir:
``hierbench build`` and the other commands, and ``hier_models.pipeline``, all go
through it. TensorFlow Datasets is imported when it is called, not before.
"""
from __future__ import annotations

import contextlib
import logging
import os

__all__ = ["build"]


@contextlib.contextmanager
def _beam_warnings_quieted():
    """Beam's own warnings that a user cannot act on (no Google Cloud client libraries,
    its worker plumbing) stay off the terminal while a build runs: the root and
    ``apache_beam`` loggers show errors only, then what they showed before."""
    loggers = [logging.getLogger(), logging.getLogger("apache_beam")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.getEffectiveLevel(), logging.ERROR))
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


#: the Beam workers' own log level unless the options set one (their start-up notices)
_WORKER_LOG_LEVEL = "default_sdk_harness_log_level=ERROR"


def _pipeline_options(beam_options):
    """``beam_options`` as Beam ``PipelineOptions``: a ``PipelineOptions`` as is, or a
    comma-separated ``key=value`` string as ``tfds build --beam_pipeline_options`` takes
    (the workers log errors only unless it sets ``default_sdk_harness_log_level``)."""
    try:
        with _beam_warnings_quieted():
            from apache_beam.options.pipeline_options import PipelineOptions
    except ImportError as err:
        raise ImportError("building on Apache Beam needs apache-beam: pip install 'hierbench[beam]'") from err
    if isinstance(beam_options, PipelineOptions):
        return beam_options
    items = [item.strip().lstrip("-") for item in beam_options.split(",")] if isinstance(beam_options, str) else []
    if not any(items):
        raise TypeError(
            "beam_options must be PipelineOptions or a string such as "
            f"'direct_num_workers=2,direct_running_mode=multi_processing', got {beam_options!r}"
        )
    if not any(item.startswith("default_sdk_harness_log_level") for item in items):
        items.append(_WORKER_LOG_LEVEL)
    return PipelineOptions(flags=[f"--{item}" for item in items if item])


def build(name: str, data_dir: str | os.PathLike | None = None, *, download: bool = True, beam_options=None):
    """The TFDS builder of the dataset ``name``, with the dataset written to ``data_dir``
    unless it is there already.

    ``name`` is as for ``tfds.load``: ``"chopsticks/depth2_either"``, ``"spaceshapes"``,
    or a resized config of the same process, ``"chopsticks/depth2_either_20000_5000"``
    (:func:`hier_datasets.builder.sized_config`), built on first use. ``data_dir``
    defaults to TFDS's own (``~/tensorflow_datasets``). ``download=False`` returns the
    builder without building (reading it then needs an earlier build).

    ``beam_options`` generates the examples on Apache Beam (the same examples as
    without; :mod:`hier_datasets.beam_build`): Beam ``PipelineOptions`` or the string
    that ``tfds build --beam_pipeline_options`` takes, e.g.
    ``"direct_num_workers=2,direct_running_mode=multi_processing"``.

    Processes that build the same dataset at the same time wait for one another and
    all return the one build (:meth:`hier_datasets.builder.HierarchicalBuilder.download_and_prepare`).

    Raises TypeError for a name that is not a string or ``beam_options`` of another
    type, ImportError where tensorflow-datasets (``pip install 'hierbench[tf]'``; or,
    for ``beam_options``, apache-beam) is not installed.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a dataset name such as 'chopsticks/depth2_either', got {type(name).__name__}")
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path or None, got {type(data_dir).__name__}")
    if not isinstance(download, bool):
        raise TypeError(f"download must be True or False, got {download!r}")
    from hier_datasets._tfds import require_tfds

    tfds = require_tfds("building a dataset")
    config = None if beam_options is None else tfds.download.DownloadConfig(beam_options=_pipeline_options(beam_options))
    # the registered class, not tfds.builder: for a resized config already on disk,
    # tfds.builder returns a ReadOnlyBuilder that knows nothing of hierbench
    family, builder_kwargs = tfds.core.naming.parse_builder_name_kwargs(name)
    builder_cls = tfds.builder_cls(str(family))
    builder = builder_cls(data_dir=None if data_dir is None else os.fspath(data_dir), **builder_kwargs)
    if download:
        with _beam_warnings_quieted() if config is not None else contextlib.nullcontext():
            builder.download_and_prepare(download_config=config)
    return builder
