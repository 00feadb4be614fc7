"""Boxhead 1-3: the generative process, its renderer (imported on first use) and its TFDS builder.

Open3D and PyVista are imported only when the first image is rendered
(:mod:`hier_datasets.boxhead.scene`), so the rest of hierbench works without them.
"""
from hier_datasets.boxhead.generator import FACTOR_NAMES, VARIANTS, Boxhead, dependencies, own_levels

__all__ = ["FACTOR_NAMES", "VARIANTS", "Boxhead", "dependencies", "own_levels"]
from hier_datasets._tfds import tfds  # noqa: E402

if tfds is not None:
    from hier_datasets.boxhead.builder import BoxheadBuilder  # noqa: F401  (registers "boxhead")

    __all__ += ["BoxheadBuilder"]
