"""TFDS builder ``chopsticks``: the eight configs of the paper, 90,000 / 10,000 examples,
and the four depth-3 ones drawn with the authors' stopping rule (``depth3_*_reference``)."""
from __future__ import annotations

import itertools

import tensorflow_datasets as tfds

from hier_datasets.builder import HierarchicalBuilder, HierarchicalConfig
from hier_datasets.chopsticks.generator import VARIANTS

_DESCRIPTIONS = {
    "slope": "every segment adds a slope",
    "inter": "every segment adds an intercept",
    "both": "every segment adds a slope and an intercept",
    "either": "every segment adds a slope or an intercept",
}


class ChopsticksBuilder(HierarchicalBuilder):
    """Chopsticks: 64-point piecewise-linear series with hierarchical segments."""

    name = "chopsticks"
    VERSION = tfds.core.Version("2.0.0")
    RELEASE_NOTES = {
        "2.0.0": "Categorical factors (the nested `chop` categoricals) hold their option index plus one where "
        "active and 0 where inactive, so that 'inactive' is not read as the first option.",
        "1.0.0": "First release.",
    }
    BUILDER_CONFIGS = [
        HierarchicalConfig(
            name=f"depth{depth}_{variant}",
            description=f"Up to {depth} segments; {_DESCRIPTIONS[variant]}.",
            train_size=90_000,
            test_size=10_000,
        )
        for depth, variant in itertools.product((2, 3), VARIANTS)
    ] + [
        HierarchicalConfig(
            name=f"depth3_{variant}_reference",
            description=f"Up to 3 segments; {_DESCRIPTIONS[variant]}; 1, 2 or 3 segments with probability "
            "1/4, 3/8, 3/8 (the authors' code, on which the paper's Table 1 was measured).",
            train_size=90_000,
            test_size=10_000,
        )
        for variant in VARIANTS
    ]
    DEFAULT_BUILDER_CONFIG_NAME = "depth2_either"
