"""Generating a hierbench split on Apache Beam.

Every hierbench builder generates on Beam when it is given Beam options, e.g.::

    tfds build chopsticks/depth3_either --imports hier_datasets \\
        --beam_pipeline_options="direct_num_workers=8,direct_running_mode=multi_processing"

or ``hier_datasets.build(name, beam_options="...")``; the same builders run on
Dataflow, Flink or Spark with those runners' pipeline options. Without Beam options
a build does not import Apache Beam (``pip install 'hierbench[beam]'`` only where
datasets are built on Beam).

A split becomes the pipeline ``Create(chunk starts) | Reshuffle | ParDo(GenerateChunks)``:
each element is the first row of a chunk of :data:`hier_datasets.generation.CHUNK`
rows. A worker draws the split's factors once, in :meth:`GenerateChunks.setup`,
from the split's fixed seed (:func:`hier_datasets.generation.split_factors`), and
makes a chunk with :func:`hier_datasets.generation.chunk_examples`, the function the
plain build calls chunk after chunk. The examples, keyed by row index, are therefore
the plain build's whatever the runner and the number of workers (the shard files
may be cut differently).

Boxhead renders in a separate process (:mod:`hier_datasets.boxhead.workers`): the
builder's ``BEAM_WORKER_OPTIONS`` give each Beam worker one rendering process, which
builds the scene once when the worker's first chunk is rendered and serves every
later chunk of that worker; images are never rendered in a Beam worker, which loads
TensorFlow to encode them.
"""
from __future__ import annotations

import dataclasses

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from hier_datasets.generation import CHUNK, chunk_examples, split_factors, split_seed

__all__ = ["GenerateChunks", "GenerateSplit", "local_runner"]


class GenerateChunks(beam.DoFn):
    """Make the examples of one chunk of a split: ``start -> (row index, example)``.

    Holds only names, options and sizes, so it pickles small; the ground truth and
    the split's factors are made in :meth:`setup`, once per worker.
    """

    def __init__(self, family: str, process: str, options: dict, split: str, size: int):
        super().__init__()
        # (``process`` names the ground truth's config; DoFn.process is the method below)
        self.family, self.config, self.options = family, process, dict(options)
        self.split, self.size = split, int(size)
        self._gt = self._factors = self._seed = None

    def setup(self):
        import hier_datasets  # noqa: F401  (registers the families in a fresh worker)
        from hier_datasets.ground_truth import ground_truth

        self._gt = ground_truth(f"{self.family}/{self.config}", **self.options)
        self._factors = split_factors(self._gt, self.family, self.config, self.split, self.size)
        self._seed = split_seed(self.family, self.config, self.split)

    def process(self, start):
        yield from chunk_examples(self._gt, self._factors, int(start), self._seed)

    def teardown(self):
        close = getattr(self._gt, "close", None)
        if close is not None:  # Boxhead: stop this worker's rendering process
            close()


class GenerateSplit(beam.PTransform):
    """The ``(key, example)`` collection of one split, as a TFDS split generator."""

    def __init__(self, family: str, process: str, options: dict, split: str, size: int):
        super().__init__()
        self.starts = list(range(0, int(size), CHUNK))
        self.fn = GenerateChunks(family, process, options, split, size)

    def expand(self, root):
        return (
            root
            | "ChunkStarts" >> beam.Create(self.starts)
            | "Spread" >> beam.Reshuffle()
            | "Generate" >> beam.ParDo(self.fn)
        )


def local_runner(download_config):
    """``download_config`` with Beam's Python ``FnApiRunner`` where it names Beam's
    default local runner (no runner, or ``DirectRunner``).

    Beam's ``DirectRunner`` first tries its Prism runner, which downloads a runner
    binary from the internet (and on a machine without access, logs the failure and
    falls back). The ``FnApiRunner`` is what it falls back to: it runs the pipeline in
    this Python installation and honours ``direct_num_workers`` and
    ``direct_running_mode``; its workers are given the pipeline options (their log
    level among them). Any other runner is left as given."""
    options = download_config.beam_options
    runner = options.view_as(StandardOptions).runner if options is not None else None
    if download_config.beam_runner is not None or runner not in (None, "DirectRunner"):
        return download_config
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo, FnApiRunner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    worker_options = JobServiceHandle.encode_pipeline_options((options or PipelineOptions()).get_all_options())
    provision = ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(pipeline_options=worker_options))
    return dataclasses.replace(download_config, beam_runner=FnApiRunner(provision_info=provision))
