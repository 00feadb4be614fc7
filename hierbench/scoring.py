"""Codes and code hierarchies given on the command line: reading and checking them
before :func:`hier_models.recipes.score` scores them."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from hier_datasets.hierarchy import Hierarchy
from hier_models.splits import SplitArrays
from hierbench.errors import CommandError

__all__ = ["check_codes", "load_codes", "load_hierarchy"]


def check_codes(codes, hierarchy: Hierarchy | None = None, *, source: str = "codes",
                data: SplitArrays | None = None) -> np.ndarray:
    """``codes`` as a 2-D float array, or CommandError: numbers, finite, as many
    columns as ``hierarchy`` has dimensions and, with ``data``, one row per example."""
    arr = np.asarray(codes)
    if arr.ndim != 2:
        raise CommandError(f"{source} has shape {arr.shape}; save a 2-D array, one row per example and one column per code")
    if not np.issubdtype(arr.dtype, np.number) or arr.dtype == bool:
        raise CommandError(f"{source} holds {arr.dtype} values; save numbers (float codes)")
    if hierarchy is not None and arr.shape[1] != hierarchy.num_dims:
        raise CommandError(
            f"{source} has {arr.shape[1]} columns but the code hierarchy has {hierarchy.num_dims} dimensions "
            f"({', '.join(hierarchy.names)}); save codes in its flat layout or give the matching hierarchy"
        )
    if arr.shape[1] < 1:
        raise CommandError(f"{source} has no columns; save at least one code dimension per example")
    if data is not None and arr.shape[0] != len(data):
        order = f"tfds.load({data.dataset!r}, split={data.split!r}, shuffle_files=False)"
        raise CommandError(
            f"{source} has {arr.shape[0]} rows but {data.dataset} split {data.split!r} has {len(data)} examples; "
            f"save one row per example, in the order of {order}"
        )
    if not np.all(np.isfinite(arr)):
        raise CommandError(f"{source} contains NaN or infinite values; save finite codes")
    return arr.astype(np.float64)


def load_codes(path) -> np.ndarray:
    """A ``.npy`` array of codes (or the one array of a ``.npz`` archive), or
    CommandError naming what the file is instead."""
    path = Path(path)
    if not path.is_file():
        raise CommandError(f"no codes file at {path}; save your codes with numpy.save as a .npy file")
    with open(path, "rb") as f:
        head = f.read(6)
    if head.startswith(b"PK"):  # a .npz archive
        with np.load(path, allow_pickle=False) as archive:
            names = list(archive.files)
            if len(names) == 1:
                return archive[names[0]]
        raise CommandError(
            f"{path} is a .npz archive of {len(names)} arrays ({', '.join(names) or 'none'}); --codes takes one "
            "array: save the codes alone with numpy.save(..., codes)"
        )
    if head != b"\x93NUMPY":
        raise CommandError(
            f"{path} is not a .npy file (a text file? load it with numpy.loadtxt); save your codes with "
            "numpy.save as a .npy file"
        )
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise CommandError(f"cannot read {path} as a .npy array ({err}); save your codes with numpy.save") from err


def load_hierarchy(path) -> Hierarchy:
    """A ``Hierarchy`` JSON file, or CommandError."""
    try:
        return Hierarchy.from_json(Path(path).read_text())
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CommandError(
            f"cannot read {path} as a Hierarchy JSON file ({err}); write it with Hierarchy.to_json()"
        ) from err
