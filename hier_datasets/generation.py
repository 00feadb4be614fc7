"""How a split's examples are generated, shared by the plain TFDS build
(:mod:`hier_datasets.builder`) and the Apache Beam build (:mod:`hier_datasets.beam_build`).

The factors of a split are drawn from its own fixed seed (:func:`split_seed`, a CRC32
of ``family/config/split``; :func:`split_factors`); its examples are then made in
chunks of :data:`CHUNK` rows (:func:`chunk_examples`), chunk ``c`` drawing its
observation noise (if any) from the seed ``[split_seed, c]``. A chunk depends on
nothing but those seeds, so both builds make the same examples. Nothing here imports
TensorFlow, TFDS or Beam.
"""
from __future__ import annotations

import zlib
from typing import Iterator

import numpy as np

from hier_datasets.ground_truth import GroundTruth

__all__ = ["CHUNK", "chunk_examples", "split_factors", "split_seed"]

#: rows generated at a time while writing a split; one Beam element is one chunk
CHUNK = 2048


def split_seed(family: str, config: str, split: str) -> int:
    """The fixed seed of one split of one config."""
    return zlib.crc32(f"{family}/{config}/{split}".encode())


def split_factors(gt: GroundTruth, family: str, process: str, split: str, size: int) -> np.ndarray:
    """The (size, num_factors) factors of one split, drawn from :func:`split_seed`."""
    return gt.sample_factors(size, np.random.default_rng(split_seed(family, process, split)))


def chunk_examples(gt: GroundTruth, factors: np.ndarray, start: int, seed: int) -> Iterator[tuple[int, dict]]:
    """``(key, example)`` for the rows ``start .. start + CHUNK - 1`` of a split's factors.

    The key is the row index. The observation noise of chunk ``c = start // CHUNK``
    comes from ``numpy.random.default_rng([seed, c])``, so a chunk is the same
    whichever process makes it and whatever was made before it (for noise-free
    processes, every registered config, the observations do not use it at all).
    Labels (``active``, ``path`` and the ground truth's extra labels) are functions
    of each row alone.
    """
    if start < 0 or start % CHUNK:
        raise ValueError(f"start must be a non-negative multiple of CHUNK={CHUNK}, got {start!r}")
    rows = factors[start : start + CHUNK]
    labels = {"active": gt.active(rows), "path": gt.paths(rows), **gt.extra_labels(rows)}
    obs = gt.observations_from_factors(rows, np.random.default_rng([seed, start // CHUNK]))
    for j, x in enumerate(obs):
        example = {gt.observation_name: x, "factors": rows[j]}
        example.update({name: values[j] for name, values in labels.items()})
        yield start + j, example
