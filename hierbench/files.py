"""Files: atomic writes, JSON of numpy values (:func:`hier_models.recipes.jsonable`),
and the check that an output path can be written before any work starts.

Every file is written to a temporary name in its folder and then renamed, so an
interrupted command never leaves a half-written file.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from hierbench.errors import CommandError

__all__ = [
    "check_writable",
    "save_keras",
    "write_atomic",
    "write_json",
    "write_npy",
    "write_npz",
]


def write_atomic(path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, which is
    created first when missing (the commands check it can be before any work)."""
    path = Path(path)
    if not isinstance(data, (bytes, str)):
        raise TypeError(f"data must be bytes or str, got {type(data).__name__}")
    raw = data.encode() if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path, data) -> None:
    from hier_models.recipes import jsonable  # loads Keras: here only, so that atomic writes stay light

    write_atomic(path, json.dumps(jsonable(data), indent=2, sort_keys=True) + "\n")


def write_npy(path, array) -> None:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array))
    write_atomic(path, buf.getvalue())


def write_npz(path, **arrays) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    write_atomic(path, buf.getvalue())


def save_keras(model, path) -> None:
    """``model.save`` to a temporary ``.keras`` file beside ``path``, then renamed."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".keras", dir=path.parent)
    os.close(fd)
    try:
        model.save(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path, *, kind: str = "folder", option: str = "--out") -> Path:
    """Raise :class:`CommandError` unless ``path`` can be written as a ``kind``
    (``"folder"`` or ``"file"``); ``option`` names the argument in the message.
    Creates nothing: a probe file in the nearest existing folder is removed at once."""
    if kind not in ("folder", "file"):
        raise ValueError(f"kind must be 'folder' or 'file', got {kind!r}")
    path = Path(path)
    if path.exists() and kind == "folder" and not path.is_dir():
        raise CommandError(f"cannot use {path} as output folder: it is a file; choose another {option}")
    if path.exists() and kind == "file" and path.is_dir():
        raise CommandError(f"cannot write {path}: it is a folder; give a file name to {option}")
    start = path if kind == "folder" else path.parent
    existing = start.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise CommandError(f"cannot write to {path}: {existing} is a file, not a folder; choose another {option}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".hierbench-probe-", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise CommandError(
            f"cannot write to {path}: {err.strerror or err} in {existing}; choose a writable {option}"
        ) from err
    return path
