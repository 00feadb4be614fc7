"""TFDS builder ``boxhead``: Boxhead 1, 2 and 3, 100,000 / 10,000 RGB 64x64 images each."""
from __future__ import annotations

import tensorflow_datasets as tfds

from hier_datasets.builder import HierarchicalBuilder, HierarchicalConfig

_DESCRIPTIONS = {
    "boxhead1": "macro hue ~ N(cube hue, 0.2); micro hues ~ U(macro - 0.1, macro + 0.1) (strongest dependence)",
    "boxhead2": "macro hue ~ U(0, 1); micro hues ~ N(macro, 0.1)",
    "boxhead3": "macro hue ~ U(0, 1); micro hues ~ N(macro, 0.2) (weakest dependence)",
}


class BoxheadBuilder(HierarchicalBuilder):
    """Boxhead: a cube in a room; four micro-level hues depend on a macro-level hue."""

    name = "boxhead"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "First release."}
    BUILDER_CONFIGS = [
        HierarchicalConfig(name=name, description=f"Boxhead {name[-1]}: {text}.", train_size=100_000, test_size=10_000)
        for name, text in _DESCRIPTIONS.items()
    ]
    DEFAULT_BUILDER_CONFIG_NAME = "boxhead1"
    #: on Beam, each worker renders in one process of its own: one scene per worker, never
    #: in the worker itself (it loads TensorFlow to encode the images)
    BEAM_WORKER_OPTIONS = {"workers": 1}
