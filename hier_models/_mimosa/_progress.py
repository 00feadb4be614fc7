"""Optional tqdm progress bars and per-step timing for the MIMOSA steps."""
from __future__ import annotations

import time

from tqdm.auto import tqdm


def progress(iterable=None, verbose: bool = False, desc: str = "", **kwargs):
    """A tqdm bar over ``iterable`` (or a manual one with ``total=``), silent unless ``verbose``."""
    return tqdm(iterable, desc=f"MIMOSA {desc}", disable=not verbose, leave=False, **kwargs)


class Stopwatch:
    """Seconds per named step: ``lap(name)`` closes the step that ran since the last lap."""

    def __init__(self):
        self.timings: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.timings[step] = now - self._last
        self._last = now

    def done(self) -> dict[str, float]:
        """The timings with their ``total``."""
        self.timings["total"] = sum(v for k, v in self.timings.items() if k != "total")
        return self.timings
