"""Generative processes behind the datasets, as pure numpy objects.

A :class:`GroundTruth` is what disentanglement_lib calls a ground-truth data: it
samples factors and maps factors to observations. The TFDS builders write exactly
what these objects produce, and the interventional metrics (FactorVAE score,
beta-VAE score) call them directly. Get one with :func:`ground_truth`::

    gt = ground_truth("chopsticks/depth2_either")
    factors, series = gt.sample(1000, random_state=0)

``random_state`` (an integer seed or a numpy Generator) drives every draw; the
keyword ``rng`` of earlier versions still works and warns.
"""
from __future__ import annotations

import abc
import re
from typing import Callable

import numpy as np

from hier_datasets.hierarchy import Hierarchy
from hier_datasets.validation import check_random_state

__all__ = ["GroundTruth", "ground_truth", "register", "available", "parse_sized_name"]


class GroundTruth(abc.ABC):
    """Base class: a hierarchy of factors and a map from factors to observations.

    Subclasses set ``name``, ``hierarchy``, ``observation_name``, ``observation_shape``,
    ``observation_dtype``, the per-dimension bounds ``low`` / ``high`` of active
    continuous factors (``signed`` when the bounds apply to the magnitude), the
    probability of each path, and implement :meth:`_continuous_values` and
    :meth:`_observations`.
    """

    name: str
    hierarchy: Hierarchy
    observation_name: str
    observation_shape: tuple[int, ...]
    observation_dtype: type
    low: np.ndarray
    high: np.ndarray
    signed: bool = False
    #: draw path counts in exact proportion (with random remainder) instead of i.i.d.
    stratified: bool = False
    #: extra per-example labels written by the builders: name -> (shape, dtype)
    label_specs: dict = {}
    #: largest value of integer observations (images scale to [0, 1] by it); None for floats
    observation_max: int | None = None

    @property
    def factor_names(self) -> tuple[str, ...]:
        return self.hierarchy.names

    @property
    def num_factors(self) -> int:
        return self.hierarchy.num_dims

    @property
    @abc.abstractmethod
    def path_probabilities(self) -> np.ndarray:
        """Probability of each path of ``hierarchy``, in path order."""

    @abc.abstractmethod
    def _continuous_values(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n, num_factors) candidate values; only active continuous entries are kept."""

    @abc.abstractmethod
    def _observations(self, factors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Observations for validated factors."""

    # ---------------------------------------------------------------- sampling
    def sample_paths(self, n: int, random_state) -> np.ndarray:
        """Path index of ``n`` independent draws (exact proportions if ``stratified``).

        ``random_state`` is an integer seed or a numpy Generator.
        """
        rng = check_random_state(random_state)
        n = _check_count(n)
        probs = self.path_probabilities
        if not self.stratified:
            return rng.choice(len(probs), size=n, p=probs)
        counts = np.floor(n * probs).astype(np.int64)
        short = n - counts.sum()
        if short:
            extra = rng.choice(len(probs), size=short, replace=False, p=probs)
            counts[extra] += 1
        return rng.permutation(np.repeat(np.arange(len(probs)), counts))

    def sample_factors(self, n: int, random_state, fixed=None) -> np.ndarray:
        """(n, num_factors) float32 factors in the hierarchy's flat layout.

        A categorical holds its option index plus one where it is active and 0 where
        it is inactive; every inactive factor holds 0.

        Args:
          n: number of rows.
          random_state: an integer seed or a numpy Generator.
          fixed: optional intervention, a dict mapping factor names (or column
            indices) to a value or to an (n,) array of per-row values. Those factors
            take the values and everything that depends on them is drawn from its
            conditional distribution: the path is drawn among the paths on which every
            fixed factor is active with its value (a fixed categorical chooses the
            branch below it; a fixed continuous factor must be active), and factors
            that depend on a fixed factor (e.g. Boxhead's hues) are drawn given it.

        Raises:
          ValueError: an unknown factor, a value out of its range, or a combination
            of values that no path of the hierarchy allows.
          TypeError: ``random_state`` is neither an integer nor a Generator.
        """
        rng = check_random_state(random_state)
        n = _check_count(n)
        h = self.hierarchy
        fixed = self._check_fixed(fixed, n)
        if fixed:
            paths = self._sample_paths_given(fixed, n, rng)
        else:
            paths = self.sample_paths(n, rng)
        values = self._continuous_values_given(len(paths), rng, fixed)
        cont = h.path_active[paths] & ~h.is_categorical
        factors = np.where(cont, values, h.path_choices[paths] + 1)
        return factors.astype(np.float32)

    def _continuous_values_given(self, n: int, rng: np.random.Generator, fixed: dict) -> np.ndarray:
        """Candidate values with the ``fixed`` continuous columns set.

        Factors here are independent given the path, so nothing else changes;
        processes whose factors depend on each other override this.
        """
        values = self._continuous_values(n, rng)
        for d, v in fixed.items():
            if not self.hierarchy.is_categorical[d]:
                values[:, d] = v
        return values

    def _sample_paths_given(self, fixed: dict, n: int, rng: np.random.Generator) -> np.ndarray:
        """Paths drawn i.i.d. from the path distribution restricted, row by row, to the
        paths that agree with the fixed values."""
        h = self.hierarchy
        allowed = np.ones((n, h.num_paths), dtype=bool)
        for d, v in fixed.items():
            if h.is_categorical[d]:
                allowed &= (h.path_choices[:, d] + 1)[None, :] == v[:, None]
            else:
                allowed &= h.path_active[None, :, d]
        weights = allowed * self.path_probabilities[None, :]
        total = weights.sum(axis=1)
        if np.any(total <= 0):
            row = int(np.flatnonzero(total <= 0)[0])
            given = {self.factor_names[d]: float(v[row]) for d, v in fixed.items()}
            raise ValueError(f"fixed: no path of {self.name!r} has {given} (row {row}) all active")
        cumulative = np.cumsum(weights, axis=1)
        u = rng.random(n) * total
        last = h.num_paths - 1 - np.argmax(allowed[:, ::-1], axis=1)
        return np.minimum((u[:, None] >= cumulative).sum(axis=1), last)

    def _check_fixed(self, fixed, n: int) -> dict[int, np.ndarray]:
        """``fixed`` as {column: (n,) float64 values}, validated."""
        if fixed is None:
            return {}
        if not isinstance(fixed, dict):
            raise TypeError(f"fixed must be a dict of factor name (or index) -> value(s), got {type(fixed).__name__}")
        h = self.hierarchy
        out = {}
        for key, value in fixed.items():
            if isinstance(key, str):
                if key not in self.factor_names:
                    raise ValueError(f"fixed: unknown factor {key!r}; factors are {list(self.factor_names)}")
                d = self.factor_names.index(key)
            elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < self.num_factors:
                d = int(key)
            else:
                raise ValueError(f"fixed: a key must be a factor name or an index in [0, {self.num_factors}), got {key!r}")
            v = np.asarray(value, dtype=np.float64)
            if v.ndim == 0:
                v = np.full(n, float(v))
            if v.shape != (n,):
                raise ValueError(f"fixed[{key!r}] must be a scalar or have shape ({n},), got shape {v.shape}")
            name = self.factor_names[d]
            if not np.all(np.isfinite(v)):
                raise ValueError(f"fixed[{name!r}] contains NaN or infinite values")
            if h.is_categorical[d]:
                ok = (v == np.round(v)) & (v >= 1) & (v <= h.num_options[d])
                if not ok.all():
                    raise ValueError(
                        f"fixed[{name!r}]: a categorical takes its option index + 1, "
                        f"1..{h.num_options[d]}; got {v[~ok][0]:g}"
                    )
            else:
                mag = np.abs(v) if self.signed else v
                tol = 1e-6 * max(1.0, abs(self.high[d]))
                ok = (mag >= self.low[d] - tol) & (mag <= self.high[d] + tol)
                if not ok.all():
                    what = "|value|" if self.signed else "value"
                    raise ValueError(
                        f"fixed[{name!r}] is {v[~ok][0]:g}, out of range; allowed {what} in "
                        f"[{self.low[d]:g}, {self.high[d]:g}]"
                    )
            out[d] = v
        return out

    def observations_from_factors(self, factors, random_state=0) -> np.ndarray:
        """Observations for the given factors; ``random_state`` drives observation noise only."""
        return self._observations(self.validate_factors(factors), check_random_state(random_state))

    def sample(self, n: int, random_state) -> tuple[np.ndarray, np.ndarray]:
        """(factors, observations) of ``n`` fresh draws; ``random_state`` is an integer
        seed or a numpy Generator."""
        rng = check_random_state(random_state)
        factors = self.sample_factors(n, rng)
        return factors, self._observations(factors, rng)

    # ------------------------------------------------------------------ labels
    def active(self, factors) -> np.ndarray:
        """(n, num_factors) bool: which factors are active in each row."""
        return self.hierarchy.activity_mask(factors)

    def paths(self, factors) -> np.ndarray:
        """(n,) int64: the path index of each row."""
        return self.hierarchy.path_index(factors)

    def validate_factors(self, factors) -> np.ndarray:
        """Check width, finiteness, categorical values, inactive zeros and ranges.

        Returns the factors as a float64 (n, num_factors) array or raises ValueError
        naming the problem and the allowed values.
        """
        arr = np.asarray(factors, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != self.num_factors:
            raise ValueError(
                f"factors must have shape (n, {self.num_factors}) with columns {list(self.factor_names)}, "
                f"got shape {np.shape(factors)}"
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError("factors contain NaN or infinite values")
        active = self.hierarchy.activity_mask(arr)
        stray = ~active & (arr != 0)
        if stray.any():
            row, col = np.argwhere(stray)[0]
            raise ValueError(
                f"factors row {row}: {self.factor_names[col]!r} is inactive on this path and must be 0, "
                f"got {arr[row, col]:g}"
            )
        cont = active & ~self.hierarchy.is_categorical
        mag = np.abs(arr) if self.signed else arr
        tol = 1e-6 * np.maximum(1.0, np.abs(self.high))
        bad = cont & ((mag < self.low - tol) | (mag > self.high + tol))
        if bad.any():
            row, col = np.argwhere(bad)[0]
            what = "|value|" if self.signed else "value"
            raise ValueError(
                f"factors row {row}: {self.factor_names[col]!r} is {arr[row, col]:g}, out of range; "
                f"allowed {what} in [{self.low[col]:g}, {self.high[col]:g}]"
            )
        return arr

    def metadata(self) -> dict:
        """What a TFDS builder stores in ``info.metadata`` (JSON-serialisable)."""
        meta = {
            "factor_names": list(self.factor_names),
            "hierarchy": self.hierarchy.to_json(),
            "path_names": list(self.hierarchy.path_names),
            "categorical_values": "a categorical factor holds its option index + 1 where active, 0 where inactive",
        }
        if self.observation_max is not None:
            meta["observation_max"] = self.observation_max
        return meta

    def extra_labels(self, factors: np.ndarray) -> dict[str, np.ndarray]:
        """Arrays for ``label_specs``, stored beside factors, active and path."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, factors={list(self.factor_names)})"


def _check_count(n) -> int:
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    return int(n)


_FAMILIES: dict[str, Callable[..., GroundTruth]] = {}


def register(family: str, factory: Callable[..., GroundTruth]) -> None:
    """Register ``factory(config, **kwargs)`` as the ground truth of dataset ``family``."""
    _FAMILIES[family] = factory


def available() -> tuple[str, ...]:
    """Registered dataset families."""
    return tuple(sorted(_FAMILIES))


_SIZED_NAME = re.compile(r"(?P<process>.+)_(?P<train>[0-9]+)_(?P<test>[0-9]+)")


def parse_sized_name(config: str) -> tuple[str, int, int] | None:
    """``(process, train_size, test_size)`` of a resized config name such as
    ``depth2_either_5000_1000`` (:func:`hier_datasets.builder.sized_config`), or None
    when ``config`` has no size suffix."""
    match = _SIZED_NAME.fullmatch(config)
    return None if match is None else (match["process"], int(match["train"]), int(match["test"]))


def ground_truth(name: str, **kwargs) -> GroundTruth:
    """The generative process of a registered dataset, e.g. ``"chopsticks/depth2_either"``.

    ``name`` is ``family`` or ``family/config`` as for ``tfds.load``, including a
    resized config ``family/config_TRAIN_TEST`` (e.g. ``"chopsticks/depth2_either_5000_1000"``),
    whose process is that of ``config``: the suffix sizes only the splits. Keyword
    arguments (e.g. ``noise=0.05`` for Chopsticks) are passed to the family.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a dataset name such as 'chopsticks/depth2_either', got {type(name).__name__}")
    family, _, config = name.partition("/")
    if family not in _FAMILIES:
        raise ValueError(f"unknown dataset {family!r}; available: {list(available())}")
    sized = parse_sized_name(config)
    return _FAMILIES[family]((sized[0] if sized else config) or None, **kwargs)
