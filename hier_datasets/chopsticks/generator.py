"""Chopsticks: piecewise-linear series whose segments form a hierarchy.

Ross & Doshi-Velez (2021), section 4. A series has 64 points. Level ``l`` (0-based)
starts at index ``int(64 * (1 - 0.5**l))`` and adds to every point from there on an
intercept offset ``c`` and/or a slope term ``s * arange(64 - start)``:

- ``slope``: every level adds a slope; ``inter``: an intercept; ``both``: both;
  ``either``: each level adds a slope or an intercept, chosen with probability 1/2.
- ``s = sign * U(min_offset * 0.01, 0.01)``, ``c = sign * U(min_offset * 0.2, 0.2)``,
  sign = +/-1 with probability 1/2.
- Level 0 is always present; deeper levels are chopped on with one of two rules
  (``stopping``, :data:`STOPPING`):

  - ``"uniform"`` (default): the number of levels is uniform on ``1..depth`` (equal
    probability of stopping at each level, as the paper's section 4 states);
  - ``"reference"``: the authors' code, which continues after level ``l`` with
    probability ``1 - 2**-(depth - 1 - l)``, the levels still to come. The number
    of levels is then ``1`` with probability ``2**-(depth - 1)``; for depth 2 both
    rules give 1/2, 1/2, for depth 3 this one gives 1/4, 3/8, 3/8 (uniform: 1/3
    each). The paper's Table 1 was measured on data drawn by this rule. Config names
    end in ``_reference`` (``depth3_either_reference``).
- Optional Gaussian observation noise of standard deviation ``noise``.

Because inactive factors are 0, the series is a linear map of the factor vector:
``series = factors @ basis`` (+ noise), where row ``d`` of ``basis`` is the step or
ramp that factor ``d`` scales. That makes generation one matrix product.
"""
from __future__ import annotations

import re

import numpy as np

from hier_datasets.ground_truth import GroundTruth, register
from hier_datasets.hierarchy import Categorical, Group, Hierarchy
from hier_datasets.validation import check_forwarded_options

VARIANTS = ("slope", "inter", "both", "either")
#: rules for the number of levels: uniform on 1..depth, or the authors' code's
STOPPING = ("uniform", "reference")
LENGTH = 64
SLOPE_MAX = 0.01
INTERCEPT_MAX = 0.2
_OFFSET_NAME = re.compile(r"(slope|intercept)(\d+)(?:@[is]+)?")
_KINDS = {"slope": ("slope",), "inter": ("intercept",), "both": ("intercept", "slope")}


def level_start(level: int, length: int = LENGTH) -> int:
    """First index that segment ``level`` affects."""
    return int(length * (1 - 0.5**level))


def level_count_probabilities(depth: int, stopping: str = "uniform") -> np.ndarray:
    """(depth,) probability that a series has ``1, 2, ..., depth`` levels.

    ``"uniform"``: ``1 / depth`` each. ``"reference"``: after level ``l`` (0-based)
    the series continues with probability ``c_l = 1 - 2**-(depth - 1 - l)``, so
    ``P(L levels) = c_0 ... c_{L-2} (1 - c_{L-1})`` with ``c_{depth-1} = 0``.
    """
    _check_config(depth, "slope", stopping)
    if stopping == "uniform":
        return np.full(depth, 1.0 / depth)
    carry_on = 1.0 - 2.0 ** -(depth - 1.0 - np.arange(depth))  # c_l; 0 at the last level
    reached = np.concatenate([[1.0], np.cumprod(carry_on[:-1])])  # P(level l is present)
    return reached * (1.0 - carry_on)


def chopsticks_hierarchy(depth: int, variant: str) -> Hierarchy:
    """The ground-truth hierarchy of a Chopsticks variant.

    ``slope`` / ``inter`` / ``both``: level ``l`` holds ``slope{l}`` and/or
    ``intercept{l}`` and a categorical ``chop{l+1}`` in {stop, chop}. ``either``: a
    categorical ``kind0`` in {intercept, slope} at the root; each segment holds one
    offset named by kind, level and the choices so far (e.g. ``slope1@is``: level 1
    slope after a level-0 intercept) and a categorical ``chop{l+1}@...`` in
    {stop, intercept, slope}.
    """
    _check_config(depth, variant)
    if variant != "either":

        def level_group(level: int) -> Group:
            dims = tuple(f"{kind}{level}" for kind in _KINDS[variant])
            if level + 1 == depth:
                return Group(dims)
            return Group(dims, Categorical(f"chop{level + 1}", (("stop", Group()), ("chop", level_group(level + 1)))))

        return Hierarchy(level_group(0))

    def segment(level: int, kind: str, prefix: str) -> Group:
        dims = (f"{kind}{level}@{prefix}",)
        if level + 1 == depth:
            return Group(dims)
        options = (
            ("stop", Group()),
            ("intercept", segment(level + 1, "intercept", prefix + "i")),
            ("slope", segment(level + 1, "slope", prefix + "s")),
        )
        return Group(dims, Categorical(f"chop{level + 1}@{prefix}", options))

    kinds = (("intercept", segment(0, "intercept", "i")), ("slope", segment(0, "slope", "s")))
    return Hierarchy(Group((), Categorical("kind0", kinds)))


def _check_config(depth, variant, stopping: str = "uniform") -> None:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, got {variant!r}")
    if not isinstance(depth, (int, np.integer)) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    if stopping not in STOPPING:
        raise ValueError(f"stopping must be one of {list(STOPPING)}, got {stopping!r}")


class Chopsticks(GroundTruth):
    """The Chopsticks generative process for one depth and variant.

    Args:
      depth: maximum number of segments (levels), >= 1.
      variant: ``"slope"``, ``"inter"``, ``"both"`` or ``"either"``.
      noise: standard deviation of Gaussian observation noise, >= 0.
      min_offset: in [0, 1); offsets have magnitude at least ``min_offset`` times
        their maximum.
      stopping: ``"uniform"`` (number of levels uniform on ``1..depth``) or
        ``"reference"`` (the authors' code; see :func:`level_count_probabilities`).
    """

    observation_name = "series"
    observation_shape = (LENGTH,)
    observation_dtype = np.float32
    signed = True

    def __init__(
        self, depth: int = 2, variant: str = "either", noise: float = 0.0, min_offset: float = 0.0,
        stopping: str = "uniform",
    ):
        _check_config(depth, variant, stopping)
        if not np.isfinite(noise) or noise < 0:
            raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
        if not 0 <= min_offset < 1:
            raise ValueError(f"min_offset must be in [0, 1), got {min_offset!r}")
        self.depth, self.variant = int(depth), variant
        self.noise, self.min_offset = float(noise), float(min_offset)
        self.stopping = stopping
        suffix = "_reference" if stopping == "reference" else ""
        self.name = f"chopsticks/depth{self.depth}_{variant}{suffix}"
        self.hierarchy = chopsticks_hierarchy(self.depth, variant)
        self._level = np.zeros(self.num_factors, dtype=np.int64)
        self.high = np.zeros(self.num_factors)
        self.basis = np.zeros((self.num_factors, LENGTH))
        for d, name in enumerate(self.factor_names):
            if self.hierarchy.is_categorical[d]:
                continue
            kind, level = _OFFSET_NAME.fullmatch(name).groups()
            level = int(level)
            start = level_start(level)
            self._level[d] = level
            if kind == "slope":
                self.high[d] = SLOPE_MAX
                self.basis[d, start:] = np.arange(LENGTH - start)
            else:
                self.high[d] = INTERCEPT_MAX
                self.basis[d, start:] = 1.0
        self.low = self.min_offset * self.high

    @property
    def path_probabilities(self) -> np.ndarray:
        h = self.hierarchy
        per_level = 2 if self.variant == "both" else 1
        levels = np.array([h.path_dim(p) // per_level for p in range(h.num_paths)])
        probs = level_count_probabilities(self.depth, self.stopping)[levels - 1]
        if self.variant == "either":
            probs *= 0.5**levels
        return probs

    def _continuous_values(self, n, rng):
        sign = np.where(rng.random((n, self.num_factors)) < 0.5, -1.0, 1.0)
        magnitude = rng.uniform(self.low, self.high, size=(n, self.num_factors))
        return sign * magnitude

    def _observations(self, factors, rng):
        series = factors @ self.basis
        if self.noise > 0:
            series = series + self.noise * rng.standard_normal(series.shape)
        return series.astype(np.float32)


def _from_config(config: str | None, **kwargs) -> Chopsticks:
    """``depth{D}_{variant}[_reference]``, e.g. ``depth2_either`` or
    ``depth3_either_reference`` (``stopping="reference"``); any depth >= 1."""
    config = config or "depth2_either"
    head, _, variant = config.partition("_")
    variant, _, rule = variant.partition("_")
    if not head.startswith("depth") or not head[5:].isdigit() or variant not in VARIANTS or rule not in ("", "reference"):
        raise ValueError(
            f"unknown chopsticks config {config!r}; use depth{{D}}_{{variant}} with D >= 1 and variant in "
            f"{list(VARIANTS)}, optionally followed by _reference (the authors' stopping rule)"
        )
    if rule:
        if kwargs.get("stopping", rule) != rule:
            raise ValueError(f"chopsticks config {config!r} has stopping='reference', got stopping={kwargs['stopping']!r}")
        kwargs["stopping"] = rule
    check_forwarded_options("ground_truth", kwargs, Chopsticks, passed=("depth", "variant"))
    return Chopsticks(int(head[5:]), variant, **kwargs)


register("chopsticks", _from_config)
