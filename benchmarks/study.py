"""What the studies share: where results go, their records (a JSON list, written
atomically), the ``mean ± sample std`` cell of their tables, the notes a page keeps
when it is redrawn, and the machine a run trained on."""
from __future__ import annotations

import json
import os
import platform
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

import hier_metrics
from hierbench.files import write_atomic

__all__ = [
    "NOTES_MARK", "RESULTS", "append_record", "kept_notes", "load_records", "machine", "mean_std", "mimosa_scores",
    "run_missing", "supersede", "superseded_path", "write_records",
]

#: the results folder: ``docs/results`` of the checkout
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
#: a page keeps everything below this line when it is redrawn
NOTES_MARK = "<!-- notes: kept when the page is redrawn -->"


def load_records(path: Path) -> list[dict]:
    """The JSON list of records at ``path`` ([] when there is no file yet)."""
    return json.loads(Path(path).read_text()) if Path(path).exists() else []


def write_records(path: Path, records: list[dict]) -> None:
    """Write the JSON list at ``path`` atomically (write, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(records, indent=1) + "\n")


def append_record(path: Path, record: dict) -> None:
    """Add one record to the JSON list at ``path``, atomically."""
    write_records(path, load_records(path) + [record])


def superseded_path(out: Path) -> Path:
    """Where the records taken out of ``out`` go: ``<name>_superseded.json`` beside it."""
    out = Path(out)
    return out.with_name(out.stem + "_superseded.json")


def supersede(out: Path, matches: Callable[[dict], bool], because: str) -> list[dict]:
    """Move every record at ``out`` for which ``matches(record)`` holds to
    :func:`superseded_path`, each with ``superseded_because=because``, and return them.

    A study's next run then trains those units again (:func:`run_missing` finds them
    missing). The superseded file is written first, so a stop between the two writes
    leaves a record in both files, never in neither."""
    if not because.strip():
        raise ValueError("say why the records are superseded (because='...'): the page shows it beside them")
    records = load_records(out)
    moved = [{**r, "superseded_because": because} for r in records if matches(r)]
    if moved:
        write_records(superseded_path(out), load_records(superseded_path(out)) + moved)
        write_records(out, [r for r in records if not matches(r)])
    return moved


def run_missing(out: Path, planned: Iterable[dict], key: Callable[[dict], tuple], run: Callable[[dict], dict],
                describe: Callable[[dict], str]) -> None:
    """Run, in order, each planned unit whose ``key`` no record at ``out`` has yet.

    ``key`` reads the same fields from a planned unit and from a record; each finished
    run's record is appended at once, so a stopped study resumes at the unit it was
    on, and ``describe(record)`` is printed."""
    done = {key(r) for r in load_records(out)}
    for unit in planned:
        if key(unit) in done:
            continue
        record = run(unit)
        append_record(out, record)
        print(describe(record), flush=True)


def mean_std(values, digits: int = 3) -> str:
    """``mean ± sample standard deviation`` (ddof 1) with ``digits`` decimals, or the one value."""
    values = np.asarray(values, dtype=float)
    if values.size > 1:
        return f"{values.mean():.{digits}f} ± {values.std(ddof=1):.{digits}f}"
    return f"{values.mean():.{digits}f}"


def kept_notes(page: Path, default: str = "\n") -> str:
    """What follows :data:`NOTES_MARK` on an existing page (``default`` if none)."""
    page = Path(page)
    if page.exists() and NOTES_MARK in page.read_text():
        return page.read_text().split(NOTES_MARK, 1)[1]
    return default


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def machine() -> dict:
    """The machine a run trained on: CPU model, cores, and native bfloat16 support."""
    name = re.search(r"^model name\s*:\s*(.+)$", _cpuinfo(), re.M)
    return {"cpu": name.group(1).strip() if name else platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "native_bfloat16": bool(re.search(r"\b(avx512_bf16|amx_bf16)\b", _cpuinfo()))}


def mimosa_scores(gt, factors: np.ndarray, hierarchy, assignments: np.ndarray) -> dict:
    """Table 1's scores of MIMOSA's output on the points of ``factors``: path purity,
    coverage (the fraction of points kept) and H-error against ``gt``'s hierarchy."""
    return {"purity": hier_metrics.purity(gt.paths(factors), assignments),
            "coverage": hier_metrics.coverage(assignments),
            "h_error": hier_metrics.h_error(hierarchy, gt.hierarchy)}
