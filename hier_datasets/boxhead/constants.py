"""Boxhead constants shared by the generator, the scene and the rendering processes.

Chen et al. (2022), appendix B.1: the ten factors in their column order, which of
them are hues, the macro / micro split, the value ranges of scale and azimuth, the
image size, and the hue <-> RGB conversion of fully saturated colours. This module
imports nothing of hier_datasets, so every other Boxhead module can import it.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "AZIMUTH_RANGE",
    "FACTOR_NAMES",
    "HUES",
    "MACRO_FACTORS",
    "MICRO",
    "MICRO_FACTORS",
    "SCALE_RANGE",
    "SIZE",
    "VARIANTS",
    "hue_to_rgb",
    "rgb_to_hue",
]

VARIANTS = ("boxhead1", "boxhead2", "boxhead3")
#: images are SIZE x SIZE RGB
SIZE = 64
MICRO = tuple(f"micro_hue{i}" for i in range(1, 5))
FACTOR_NAMES = ("wall_hue", "floor_hue", "cube_hue", "scale", "azimuth", "macro_hue") + MICRO
#: the circular factors (values in [0, 1), wrapping)
HUES = ("wall_hue", "floor_hue", "cube_hue", "macro_hue") + MICRO
#: factor groups of the split (macro / micro) DCI of Chen et al. (2022)
MACRO_FACTORS = ("floor_hue", "wall_hue", "cube_hue", "azimuth", "scale")
MICRO_FACTORS = MICRO
SCALE_RANGE = (1.0, 1.25)
#: radians
AZIMUTH_RANGE = (-math.pi / 6, math.pi / 6)


def hue_to_rgb(hue) -> np.ndarray:
    """Fully saturated colours (HLS lightness 0.5, saturation 1) of hues in [0, 1], as RGB in [0, 1].

    Vectorised ``colorsys.hls_to_rgb(h, 0.5, 1)``; the last axis of the result is RGB.
    """
    h6 = 6.0 * np.mod(np.asarray(hue, dtype=np.float64), 1.0)[..., None]
    # r = |6h - 3| - 1, g = 2 - |6h - 2|, b = 2 - |6h - 4|, each clipped to [0, 1]
    sign, offset = np.array([1.0, -1.0, -1.0]), np.array([-1.0, 2.0, 2.0])
    return np.clip(sign * np.abs(h6 - np.array([3.0, 2.0, 4.0])) + offset, 0.0, 1.0)


def rgb_to_hue(rgb) -> np.ndarray:
    """Hue in [0, 1) of RGB colours (last axis), as in ``colorsys.rgb_to_hls``; grey gives 0."""
    rgb = np.asarray(rgb, dtype=np.float64)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    hi, lo = rgb.max(axis=-1), rgb.min(axis=-1)
    span = np.where(hi > lo, hi - lo, 1.0)
    h = np.where(hi == r, (g - b) / span, np.where(hi == g, 2.0 + (b - r) / span, 4.0 + (r - g) / span))
    return np.where(hi > lo, np.mod(h / 6.0, 1.0), 0.0)
