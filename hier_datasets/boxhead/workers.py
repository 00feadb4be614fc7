"""Rendering processes: each builds the Boxhead scene once and renders the slices it is sent.

The processes are fresh interpreters (``python -c`` running :func:`_serve`), never
forks of the caller, so no OpenGL context or TensorFlow thread is inherited,
and the caller's ``__main__`` is not re-imported (no ``if __name__ == "__main__"``
guard is needed in user scripts). Each process talks over two private pipes:

- request: ``n`` (int64), then ``n x 10`` float64 factor rows;
- reply: a status byte (0 ok, 1 error), a length (int64), then the ``n`` uint8
  images or the error's traceback text.

A batch is cut into contiguous slices, one per process, and the replies are joined
in order, so the images do not depend on the number of processes. One pool serves
every Boxhead variant in a process (the scene does not depend on the variant); its
processes start as batches need them and stop at :func:`shutdown` or when Python exits.
"""
from __future__ import annotations

import atexit
import os
import struct
import subprocess
import sys
import threading
import traceback
from pathlib import Path

import numpy as np

from hier_datasets.boxhead.constants import FACTOR_NAMES, SIZE

_HEADER = struct.Struct("<q")
_REPLY = struct.Struct("<Bq")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
# the worker imports the same hier_datasets as its parent: from the folder that holds it
_ENTRY = (
    "import sys\n"
    "root, request_fd, reply_fd = sys.argv[1:4]\n"
    "if root not in sys.path: sys.path.insert(0, root)\n"
    "from hier_datasets.boxhead.workers import _serve\n"
    "_serve(int(request_fd), int(reply_fd))\n"
)


def _read_exact(stream, size: int) -> bytearray:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        k = stream.readinto(view[got:])
        if not k:
            raise EOFError(f"pipe closed after {got} of {size} bytes")
        got += k
    return data


class RenderPool:
    """Rendering processes, started as batches need them."""

    def __init__(self, num_factors: int, image_shape: tuple[int, ...]):
        self.num_factors = num_factors
        self.image_shape = tuple(image_shape)
        self._workers: list[tuple[subprocess.Popen, object, object]] = []

    @property
    def processes(self) -> list[subprocess.Popen]:
        """The running processes."""
        return [proc for proc, _, _ in self._workers]

    def _start(self, count: int) -> None:
        while len(self._workers) < count:
            req_r, req_w = os.pipe()
            rep_r, rep_w = os.pipe()
            proc = subprocess.Popen(
                [sys.executable, "-c", _ENTRY, _PACKAGE_ROOT, str(req_r), str(rep_w)],
                pass_fds=(req_r, rep_w),
                stdin=subprocess.DEVNULL,
            )
            os.close(req_r)
            os.close(rep_w)
            self._workers.append((proc, os.fdopen(req_w, "wb"), os.fdopen(rep_r, "rb")))

    def render(self, factors: np.ndarray, parts: int = 1) -> np.ndarray:
        """Images of (n, num_factors) rows, rendered as ``parts`` contiguous slices by as many processes."""
        parts = max(1, int(parts))
        self._start(parts)
        slices = np.array_split(np.ascontiguousarray(factors, dtype=np.float64), parts)
        try:
            for (_, requests, _), part in zip(self._workers, slices):
                requests.write(_HEADER.pack(len(part)) + part.tobytes())
                requests.flush()
            images = []
            for (_, _, replies), part in zip(self._workers, slices):
                status, size = _REPLY.unpack(_read_exact(replies, _REPLY.size))
                payload = _read_exact(replies, size)
                if status:
                    raise RuntimeError(f"a Boxhead rendering process failed:\n{payload.decode(errors='replace')}")
                images.append(np.frombuffer(payload, dtype=np.uint8).reshape(len(part), *self.image_shape))
        except (EOFError, OSError) as err:
            codes = [proc.poll() for proc in self.processes]
            self.close()
            raise RuntimeError(
                f"a Boxhead rendering process stopped (exit codes {codes}); see its messages above"
            ) from err
        except RuntimeError:
            self.close()
            raise
        return np.concatenate(images)

    def close(self) -> None:
        """Stop the processes: closing its request pipe ends a process."""
        workers, self._workers = self._workers, []
        for _, requests, replies in workers:
            for stream in (requests, replies):
                try:
                    stream.close()
                except OSError:
                    pass
        for proc, _, _ in workers:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


_POOL: RenderPool | None = None
_LOCK = threading.Lock()


def render(factors: np.ndarray, parts: int = 1) -> np.ndarray:
    """Render validated Boxhead factor rows in ``parts`` processes of this process's shared pool."""
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = RenderPool(len(FACTOR_NAMES), (SIZE, SIZE, 3))
            atexit.register(shutdown)
        return _POOL.render(factors, parts)


def running() -> list[subprocess.Popen]:
    """The rendering processes now running."""
    return [] if _POOL is None else _POOL.processes


def shutdown() -> None:
    """Stop every rendering process (a later render starts them again)."""
    with _LOCK:
        if _POOL is not None:
            _POOL.close()


def _serve(request_fd: int, reply_fd: int) -> None:
    from hier_datasets.boxhead import scene  # Open3D and PyVista: only in the rendering processes

    with os.fdopen(request_fd, "rb") as requests, os.fdopen(reply_fd, "wb") as replies:
        while True:
            try:
                (n,) = _HEADER.unpack(_read_exact(requests, _HEADER.size))
            except EOFError:
                scene.close()
                return
            raw = _read_exact(requests, n * len(FACTOR_NAMES) * 8)
            try:
                factors = np.frombuffer(raw, dtype=np.float64).reshape(n, len(FACTOR_NAMES))
                status, payload = 0, scene.render(factors).tobytes()
            except Exception:  # reported to the parent, which raises it
                status, payload = 1, traceback.format_exc().encode()
            replies.write(_REPLY.pack(status, len(payload)) + payload)
            replies.flush()

