"""Fixtures and helpers that several test modules share.

Fixtures (found by pytest by name):

- ``tiny_data_dir``: a TFDS data dir with tiny builds of Chopsticks (:data:`CHOPSTICKS`,
  512 / 128 examples) and Spaceshapes (:data:`SPACESHAPES`, 256 / 64);
- ``cli_data_dir``: a TFDS data dir with :data:`CLI_DATASET` (400 / 300 examples),
  the command-line tests' dataset.

Helpers (``from conftest import ...``): monotone warps of factors into "perfect"
codes, flat hierarchies, and two re-layouts of the Spaceshapes hierarchy.
"""
from __future__ import annotations

import numpy as np
import pytest

from hier_datasets.hierarchy import Categorical, Group, Hierarchy

# ------------------------------------------------------------------ TFDS builds
#: resized configs of the real builders (``config_TRAIN_TEST``)
CHOPSTICKS = "chopsticks/depth2_either_512_128"
SPACESHAPES = "spaceshapes/default_256_64"
CLI_DATASET = "chopsticks/depth2_either_400_300"


def _build(tmp_path_factory, *names) -> str:
    import hier_datasets

    data_dir = str(tmp_path_factory.mktemp("tfds"))
    for name in names:
        hier_datasets.build(name, data_dir)
    return data_dir


@pytest.fixture(scope="session")
def tiny_data_dir(tmp_path_factory):
    """A data dir holding the tiny Chopsticks (512/128) and Spaceshapes (256/64) builds."""
    return _build(tmp_path_factory, CHOPSTICKS, SPACESHAPES)


@pytest.fixture(scope="session")
def cli_data_dir(tmp_path_factory):
    """A data dir holding :data:`CLI_DATASET` (Chopsticks depth2_either, 400 / 300)."""
    return _build(tmp_path_factory, CLI_DATASET)


# --------------------------------------------------------------- metric inputs
#: invertible monotone warps on [-1, 1] (increasing and decreasing, non-linear);
#: linear enough for SAP's linear fits (squared correlation > 0.97)
MILD_WARPS = (
    lambda v: 2.0 * v + 0.3 * v**3 - 1.0,
    lambda v: -np.exp(0.5 * v),
    lambda v: v + 0.3 * np.tanh(2 * v),
    lambda v: -3.0 * v + 5.0,
    lambda v: np.sinh(v),
)
#: strongly non-linear invertible monotone warps on [-1, 1]
STRONG_WARPS = (
    lambda v: np.exp(3 * v),
    lambda v: -(v**3) - 0.05 * v,
    lambda v: np.tanh(3 * v),
    lambda v: np.arctan(5 * v) + 0.1 * v,
    lambda v: -np.log1p(1.2 + v),
)
PERMUTATION = (2, 0, 4, 1, 3)


def uniform_factors(n: int, k: int = 5, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, k))


def perfect_codes(factors: np.ndarray, warps=MILD_WARPS) -> np.ndarray:
    """Code j = warps[j](factor PERMUTATION[j]): a permutation through invertible warps."""
    k = factors.shape[1]
    perm = [p for p in PERMUTATION if p < k]
    return np.column_stack([warps[j](factors[:, perm[j]]) for j in range(k)])


# ------------------------------------------- re-layouts of Spaceshapes' hierarchy
JET = Categorical("jet", (("none", Group()), ("jet", Group(("jetlen",)))))
#: x and y pushed down into every shape's branch
PUSHED_DOWN = Hierarchy(
    Group((), Categorical("shape", (
        ("moon", Group(("x_moon", "y_moon", "phase"))),
        ("star", Group(("x_star", "y_star", "shine"))),
        ("ship", Group(("x_ship", "y_ship", "angle"), JET)),
    )))
)
#: phase, shine and angle merged up into one root dimension
MERGED_UP = Hierarchy(
    Group(("x", "y", "merged"), Categorical("shape", (("moon", Group()), ("star", Group()), ("ship", Group((), JET)))))
)
