"""Figures and report files of a run (Ross & Doshi-Velez 2021, figures 2, 12 and 13).

Every figure function takes numpy arrays and returns a matplotlib ``Figure``;
:func:`write_report` saves a run's metrics as ``metrics.json``, a Markdown summary
and a self-contained ``report.html`` with the figures embedded as PNG. All files are
written atomically (to a temporary name, then renamed), so an interrupted run never
leaves a half-written file.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from hier_datasets.hierarchy import Hierarchy  # noqa: E402

__all__ = [
    "pairwise_histograms",
    "latent_traversals",
    "hierarchy_comparison",
    "component_projection",
    "metrics_table",
    "write_atomic",
    "write_report",
]


def pairwise_histograms(
    factors: np.ndarray,
    codes: np.ndarray,
    *,
    factor_names: Sequence[str],
    factor_active: np.ndarray | None = None,
    code_active: np.ndarray | None = None,
    per_factor: Sequence[float] | None = None,
    score_name: str = "R4c",
    bins: int = 24,
):
    """Grid of 2-D histograms: ground-truth factor (rows) against code (columns).

    Each cell uses only the rows where both the factor and the code are active
    (figure 12 of the paper); ``per_factor`` scores are written at the row ends.
    """
    factors, codes = np.asarray(factors, float), np.asarray(codes, float)
    n, k = factors.shape
    d = codes.shape[1]
    fa = np.ones((n, k), bool) if factor_active is None else np.asarray(factor_active, bool)
    ca = np.ones((n, d), bool) if code_active is None else np.asarray(code_active, bool)
    fig, axes = plt.subplots(k, d, figsize=(1.1 * d + 1.6, 1.0 * k + 0.6), squeeze=False)
    for i in range(k):
        for j in range(d):
            ax = axes[i, j]
            both = fa[:, i] & ca[:, j]
            if both.sum() > 1:
                ax.hist2d(codes[both, j], factors[both, i], bins=bins, cmap="Greys")
            ax.set_xticks([])
            ax.set_yticks([])
            if i == k - 1:
                ax.set_xlabel(f"z{j}", fontsize=8)
            if j == 0:
                ax.set_ylabel(factor_names[i], fontsize=8, rotation=0, ha="right", va="center")
        if per_factor is not None:
            axes[i, -1].annotate(f"{per_factor[i]:.2f}", (1.08, 0.5), xycoords="axes fraction", va="center", fontsize=8)
    if per_factor is not None:
        axes[0, -1].set_title(score_name, fontsize=8, loc="right", x=1.35)
    fig.suptitle("factor vs code, where both are active", fontsize=9)
    fig.tight_layout()
    return fig


def latent_traversals(
    decode: Callable[[np.ndarray], np.ndarray],
    base_code: np.ndarray,
    codes: np.ndarray,
    *,
    code_active: np.ndarray | None = None,
    steps: int = 7,
    percentiles=(1, 99),
):
    """Sweep each code dimension from its 1st to 99th percentile around ``base_code``.

    ``decode`` maps (m, d) codes to observations: (m, L) series are drawn as
    overlaid lines (one panel per dimension), (m, H, W, C) images as a grid with one
    row per dimension (figure 13 of the paper). Only dimensions active in
    ``base_code``'s row of ``code_active`` (all when None) are swept.
    """
    base_code = np.asarray(base_code, float)
    d = base_code.shape[0]
    dims = list(range(d)) if code_active is None else [j for j in range(d) if code_active[j]]
    lo, hi = np.percentile(codes, percentiles, axis=0)
    sweeps = []
    for j in dims:
        grid = np.repeat(base_code[None], steps, axis=0)
        grid[:, j] = np.linspace(lo[j], hi[j], steps)
        sweeps.append(np.asarray(decode(grid)))
    if not sweeps:
        raise ValueError("no active code dimension to traverse")
    if sweeps[0].ndim == 2:
        cols = min(4, len(dims))
        rows = math.ceil(len(dims) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 2.2 * rows), squeeze=False)
        colours = plt.cm.viridis(np.linspace(0, 1, steps))
        for ax, j, sweep in zip(axes.flat, dims, sweeps):
            for s in range(steps):
                ax.plot(sweep[s], color=colours[s], lw=1)
            ax.set_title(f"z{j}", fontsize=9)
        for ax in list(axes.flat)[len(dims):]:
            ax.axis("off")
    else:
        fig, axes = plt.subplots(len(dims), steps, figsize=(steps * 0.9, len(dims) * 0.95), squeeze=False)
        for r, (j, sweep) in enumerate(zip(dims, sweeps)):
            for s in range(steps):
                img = sweep[s]
                axes[r, s].imshow(img[..., 0] if img.shape[-1] == 1 else np.clip(img, 0, 1), cmap="gray", vmin=0, vmax=1)
                axes[r, s].set_xticks([])
                axes[r, s].set_yticks([])
            axes[r, 0].set_ylabel(f"z{j}", fontsize=8, rotation=0, ha="right", va="center")
    fig.suptitle("latent traversals (1st to 99th percentile)", fontsize=9)
    fig.tight_layout()
    return fig


def _tree_text(hierarchy: Hierarchy, path_scores: Sequence[float] | None, counts: Sequence[int] | None) -> str:
    lines = [str(hierarchy), ""]
    for p, name in enumerate(hierarchy.path_names):
        extra = []
        if counts is not None:
            extra.append(f"n={counts[p]}")
        if path_scores is not None:
            extra.append(f"purity {path_scores[p]:.3f}")
        lines.append(f"[{p}] {name} ({hierarchy.path_dim(p)}-D)" + (": " + ", ".join(extra) if extra else ""))
    return "\n".join(lines)


def hierarchy_comparison(
    learned: Hierarchy,
    true: Hierarchy,
    *,
    path_purity: Sequence[float] | None = None,
    path_counts: Sequence[int] | None = None,
    h_error: int | None = None,
):
    """The learned hierarchy beside the true one, with per-path purity (figure 2)."""
    left = _tree_text(learned, path_purity, path_counts)
    right = _tree_text(true, None, None)
    height = max(left.count("\n"), right.count("\n")) + 3
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.2 * height + 0.8))
    for ax, title, text in ((axes[0], "learned", left), (axes[1], "true", right)):
        ax.axis("off")
        ax.set_title(title, fontsize=10, loc="left")
        ax.text(0, 1, text, family="monospace", fontsize=7, va="top", transform=ax.transAxes)
    if h_error is not None:
        fig.suptitle(f"H-error {h_error}", fontsize=10)
    fig.tight_layout()
    return fig


def component_projection(codes: np.ndarray, true_paths: np.ndarray, assignments: np.ndarray | None = None, *, max_points: int = 5000, seed: int = 0):
    """Codes projected on their first two principal components, coloured by true path
    (left) and by learned component (right; grey = discarded)."""
    codes = np.asarray(codes, float)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(codes))[:max_points]
    x = codes[rows] - codes[rows].mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    xy = x @ vt[:2].T if vt.shape[0] >= 2 else np.c_[x[:, 0], np.zeros(len(x))]
    panels = [("true path", np.asarray(true_paths)[rows])]
    if assignments is not None:
        panels.append(("learned component", np.asarray(assignments)[rows]))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2), squeeze=False)
    for ax, (title, labels) in zip(axes[0], panels):
        discarded = labels < 0
        ax.scatter(xy[discarded, 0], xy[discarded, 1], s=2, c="lightgrey")
        ax.scatter(xy[~discarded, 0], xy[~discarded, 1], s=2, c=labels[~discarded], cmap="tab10", vmin=0, vmax=9)
        ax.set_title(title, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


def metrics_table(metrics: Mapping[str, Mapping[str, float]]) -> str:
    """Markdown table: one row per model, one column per metric."""
    columns = sorted({k for row in metrics.values() for k in row})
    lines = ["| model | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for model, row in metrics.items():
        cells = [f"{row[c]:.3f}" if isinstance(row.get(c), (int, float)) else "" for c in columns]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def write_report(out_dir, metrics: Mapping[str, Mapping[str, float]], figures: Mapping[str, object], *, title: str, notes: str = "") -> dict:
    """Write ``metrics.json``, ``summary.md``, ``report.html`` and one PNG per figure.

    ``figures`` maps a file stem to a matplotlib figure. Returns the paths written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pngs = {stem: _png(fig) for stem, fig in figures.items()}
    written = {}
    for stem, data in pngs.items():
        write_atomic(out / f"{stem}.png", data)
        written[stem] = out / f"{stem}.png"
    table = metrics_table(metrics)
    write_atomic(out / "metrics.json", json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    md = [f"# {title}", "", table, ""] + ([notes, ""] if notes else []) + [f"![{s}]({s}.png)" for s in pngs]
    write_atomic(out / "summary.md", "\n".join(md) + "\n")
    images = "".join(
        f'<h2>{html.escape(stem.replace("_", " "))}</h2>'
        f'<img alt="{html.escape(stem)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'
        for stem, data in pngs.items()
    )
    rows = table.splitlines()
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    body = [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]]
    html_table = (
        "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
        + "</table>"
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "img{max-width:100%}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{html_table}<p>{html.escape(notes)}</p>{images}</body></html>"
    )
    write_atomic(out / "report.html", page)
    written.update(metrics=out / "metrics.json", summary=out / "summary.md", html=out / "report.html")
    return written
