"""Optional tqdm progress bars for the long MIMOSA steps."""
from __future__ import annotations

from tqdm.auto import tqdm


def progress(iterable=None, verbose: bool = False, desc: str = "", **kwargs):
    """A tqdm bar over ``iterable`` (or a manual one with ``total=``), silent unless ``verbose``."""
    return tqdm(iterable, desc=f"MIMOSA {desc}", disable=not verbose, leave=False, **kwargs)
