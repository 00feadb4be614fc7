"""TFDS builder ``spaceshapes``: 54,000 / 6,000 binary 64x64 images."""
from __future__ import annotations

import tensorflow_datasets as tfds

from hier_datasets.builder import HierarchicalBuilder, HierarchicalConfig


class SpaceshapesBuilder(HierarchicalBuilder):
    """Spaceshapes: moons, stars and ships with shape-dependent factors."""

    name = "spaceshapes"
    VERSION = tfds.core.Version("2.0.0")
    RELEASE_NOTES = {
        "2.0.0": "Categorical factors (`shape` and `jet`; a ship's jet flame follows `jet`, not a non-zero `jetlen`) "
        "hold their option index plus one where "
        "active and 0 where inactive, so that 'inactive' is not read as the first option.",
        "1.0.0": "First release.",
    }
    BUILDER_CONFIGS = [
        HierarchicalConfig(
            name="default",
            description="20,000 moons, 20,000 stars, 10,000 ships without and 10,000 with a jet.",
            train_size=54_000,
            test_size=6_000,
        )
    ]
