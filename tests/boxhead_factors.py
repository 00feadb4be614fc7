"""Boxhead factor rows and hue arithmetic shared by the Boxhead tests."""
import numpy as np

from hier_datasets.boxhead.generator import FACTOR_NAMES

IDX = {name: i for i, name in enumerate(FACTOR_NAMES)}
MICRO = [f"micro_hue{i}" for i in range(1, 5)]


def circ(a, b=0.0):
    """Signed circular difference a - b of hues, in [-0.5, 0.5)."""
    return np.mod(np.asarray(a, dtype=np.float64) - b + 0.5, 1.0) - 0.5


def row(**values) -> np.ndarray:
    """A factor row: distinct wall, floor, cube and square hues, scale 1, azimuth 0, unless given."""
    base = dict(wall_hue=0.6, floor_hue=0.3, cube_hue=0.0, scale=1.0, azimuth=0.0, macro_hue=0.8,
                micro_hue1=0.15, micro_hue2=0.45, micro_hue3=0.75, micro_hue4=0.9)
    base.update(values)
    return np.array([base[name] for name in FACTOR_NAMES])
