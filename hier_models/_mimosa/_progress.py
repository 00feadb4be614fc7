"""Optional progress bars and per-step timing for the MIMOSA steps."""
from __future__ import annotations

import time

from hier_models import progress as _progress


def progress(iterable=None, verbose: bool = False, desc: str = "", **kwargs):
    """A bar (:func:`hier_models.progress.progress`) named after the MIMOSA step ``desc``,
    silent unless ``verbose``."""
    return _progress.progress(iterable, enabled=verbose, desc=f"MIMOSA {desc}", **kwargs)


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
