"""Figures and report files of a run (Ross & Doshi-Velez 2021, figures 2, 12 and 13).

Every figure function takes numpy arrays and returns a matplotlib ``Figure``;
:func:`run_figures` draws all of them for the models of a run (:class:`RunEntry`);
:func:`write_report` saves a run's metrics as ``metrics.json``, a Markdown summary
with a models x metrics table (:func:`metrics_table`) and a self-contained
``report.html`` with the figures embedded as PNG. All files are written atomically
(to a temporary name, then renamed), so an interrupted run never leaves a
half-written file.
"""
from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
import os
import re
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
    "path_purity",
    "run_figures",
    "RunEntry",
    "METRIC_LABELS",
    "path_traversals",
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
    title: str = "",
    code_names: Sequence[str] | None = None,
):
    """Grid of 2-D histograms: ground-truth factor (rows) against code (columns).

    Each cell uses only the rows where both the factor and the code are active
    (figure 12 of the paper); ``per_factor`` scores are written at the row ends;
    ``title`` (e.g. the model) heads the figure; ``code_names`` label the columns
    (default z0, z1, ...).
    """
    factors, codes = np.asarray(factors, float), np.asarray(codes, float)
    n, k = factors.shape
    d = codes.shape[1]
    code_names = [f"z{j}" for j in range(d)] if code_names is None else list(code_names)
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
                ax.set_xlabel(code_names[j], fontsize=8)
            if j == 0:
                ax.set_ylabel(factor_names[i], fontsize=8, rotation=0, ha="right", va="center")
        if per_factor is not None:
            axes[i, -1].annotate(f"{per_factor[i]:.2f}", (1.08, 0.5), xycoords="axes fraction", va="center", fontsize=8)
    if per_factor is not None:
        axes[0, -1].set_title(score_name, fontsize=8, loc="right", x=1.35)
    fig.suptitle(f"{title + ': ' if title else ''}factor vs code, where both are active", fontsize=9)
    fig.tight_layout()
    return fig


def _nearest_median(x: np.ndarray) -> int:
    """Index of the row of ``x`` nearest its per-column median (columns standardised)."""
    x = np.asarray(x, float)
    z = (x - np.median(x, axis=0)) / (x.std(axis=0) + 1e-12)
    return int(np.argmin(np.sum(z**2, axis=1)))


def _sweeps(decode, base_code, dims, codes, on, steps, percentiles) -> list[np.ndarray]:
    """Decoded sweeps of each dimension in ``dims`` from its low to high percentile
    (over the rows where ``on`` marks it active) around ``base_code``."""
    out = []
    for j in dims:
        values = codes[on[:, j], j]
        lo, hi = np.percentile(values, percentiles) if values.size else (base_code[j], base_code[j])
        grid = np.repeat(base_code[None], steps, axis=0)
        grid[:, j] = np.linspace(lo, hi, steps)
        out.append(np.asarray(decode(grid)))
    return out


def _traversal_figure(groups, code_names: Sequence[str], steps: int, title: str):
    """Draw ``groups`` of (label, dims, sweeps): series as overlaid lines (at most
    four panels a row, each group on its own rows), images as one grid row per swept
    dimension."""
    groups = [g for g in groups if len(g[1])]
    if not groups:
        raise ValueError("no active code dimension to traverse")
    head = f"{title + ': ' if title else ''}latent traversals (1st to 99th percentile"
    if groups[0][2][0].ndim == 2:
        rows = [(label if k == 0 else "", list(zip(dims, sweeps))[k : k + 4])
                for label, dims, sweeps in groups for k in range(0, len(dims), 4)]
        cols = max(len(panels) for _, panels in rows)
        fig, axes = plt.subplots(len(rows), cols, figsize=(3 * cols, 2.2 * len(rows)), squeeze=False)
        colours = plt.cm.viridis(np.linspace(0, 1, steps))
        for r, (label, panels) in enumerate(rows):
            for c in range(cols):
                ax = axes[r, c]
                if c >= len(panels):
                    ax.axis("off")
                    continue
                j, sweep = panels[c]
                for step in range(steps):
                    ax.plot(sweep[step], color=colours[step], lw=1)
                ax.set_title(f"{label}   {code_names[j]}" if label and c == 0 else code_names[j], fontsize=8, loc="left")
        fig.suptitle(head + ": dark to light)", fontsize=9)
    else:
        lines = [(label if k == 0 else "", j, sweep) for label, dims, sweeps in groups for k, (j, sweep) in enumerate(zip(dims, sweeps))]
        fig, axes = plt.subplots(len(lines), steps, figsize=(steps * 0.9 + 1.2, len(lines) * 0.95), squeeze=False)
        for r, (label, j, sweep) in enumerate(lines):
            for step in range(steps):
                img = sweep[step]
                axes[r, step].imshow(img[..., 0] if img.shape[-1] == 1 else np.clip(img, 0, 1), cmap="gray", vmin=0, vmax=1)
                axes[r, step].set_xticks([])
                axes[r, step].set_yticks([])
            name = f"{label}\n{code_names[j]}" if label else code_names[j]
            axes[r, 0].set_ylabel(name, fontsize=7, rotation=0, ha="right", va="center")
        fig.suptitle(head + ": left to right)", fontsize=9)
    fig.tight_layout()
    return fig


def latent_traversals(
    decode: Callable[[np.ndarray], np.ndarray],
    base_code: np.ndarray,
    codes: np.ndarray,
    *,
    code_active: np.ndarray | None = None,
    codes_active: np.ndarray | None = None,
    steps: int = 7,
    percentiles=(1, 99),
    title: str = "",
    code_names: Sequence[str] | None = None,
):
    """Sweep each code dimension from its 1st to 99th percentile around ``base_code``.

    ``decode`` maps (m, d) codes to observations: (m, L) series are drawn as
    overlaid lines (one panel per dimension), (m, H, W, C) images as a grid with one
    row per dimension (figure 13 of the paper). Only dimensions active in
    ``base_code``'s row of ``code_active`` (all when None) are swept. The
    percentiles of a dimension are taken over the rows of ``codes`` where
    ``codes_active`` (n, d) marks it active (all rows when None). ``title`` (e.g. the
    model) heads the figure; ``code_names`` name the dimensions (default z0, z1, ...).
    """
    base_code = np.asarray(base_code, float)
    codes = np.asarray(codes, float)
    d = base_code.shape[0]
    code_names = [f"z{j}" for j in range(d)] if code_names is None else list(code_names)
    dims = list(range(d)) if code_active is None else [j for j in range(d) if code_active[j]]
    on = np.ones(codes.shape, bool) if codes_active is None else np.asarray(codes_active, bool)
    sweeps = _sweeps(decode, base_code, dims, codes, on, steps, percentiles)
    return _traversal_figure([("", dims, sweeps)], code_names, steps, title)


def path_traversals(
    decode: Callable[[np.ndarray], np.ndarray],
    codes: np.ndarray,
    hierarchy: Hierarchy,
    *,
    steps: int = 7,
    percentiles=(1, 99),
    title: str = "",
    max_paths: int = 8,
):
    """Latent traversals of hierarchical codes, path by path.

    ``codes`` are in ``hierarchy``'s flat layout. For each path that some rows take
    (the ``max_paths`` most common), the row nearest the median of that path's codes
    is the base, and each continuous dimension active on the path is swept between
    its percentiles over the rows where it is active. Paths without continuous
    dimensions have nothing to sweep and are left out.
    """
    codes = np.asarray(codes, float)
    paths = hierarchy.path_index(codes)
    on = hierarchy.activity_mask(codes)
    continuous = hierarchy.path_active & ~hierarchy.is_categorical
    present, counts = np.unique(paths[paths >= 0], return_counts=True)
    chosen = sorted(present[np.argsort(-counts, kind="stable")][:max_paths])
    groups = []
    for p in chosen:
        dims = list(np.flatnonzero(continuous[p]))
        if not dims:
            continue
        rows = np.flatnonzero(paths == p)
        base = codes[rows[_nearest_median(codes[rows][:, dims])]]
        label = f"[{p}] {hierarchy.path_names[p]}"
        groups.append((label, dims, _sweeps(decode, base, dims, codes, on, steps, percentiles)))
    return _traversal_figure(groups, hierarchy.names, steps, title)


def path_purity(true_paths, pred_paths, num_paths: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per learned path: purity (share of its points on its most common true path),
    number of points, and that most common true path (-1 for an empty path).
    Points with ``pred_paths == -1`` (discarded) are left out."""
    true = np.asarray(true_paths, np.int64)
    pred = np.asarray(pred_paths, np.int64)
    kept = pred >= 0
    table = np.zeros((num_paths, int(true.max(initial=0)) + 1), np.int64)
    np.add.at(table, (pred[kept], true[kept]), 1)
    counts = table.sum(axis=1)
    purity = np.divide(table.max(axis=1), counts, out=np.zeros(num_paths), where=counts > 0)
    majority = np.where(counts > 0, table.argmax(axis=1), -1)
    return purity, counts, majority


def _tree_text(
    hierarchy: Hierarchy,
    path_scores: Sequence[float] | None,
    counts: Sequence[int] | None,
    matches: Sequence[str] | None = None,
) -> str:
    lines = [str(hierarchy), ""]
    for p, name in enumerate(hierarchy.path_names):
        extra = []
        if counts is not None:
            extra.append(f"n={counts[p]}")
        if path_scores is not None:
            extra.append(f"purity {path_scores[p]:.3f}")
        line = f"[{p}] {name} ({hierarchy.path_dim(p)}-D)" + (": " + ", ".join(extra) if extra else "")
        if matches is not None and matches[p]:
            line += f"\n      mostly true [{matches[p]}]"
        lines.append(line)
    return "\n".join(lines)


def hierarchy_comparison(
    learned: Hierarchy,
    true: Hierarchy,
    *,
    path_purity: Sequence[float] | None = None,
    path_counts: Sequence[int] | None = None,
    path_matches: Sequence[str] | None = None,
    h_error: int | None = None,
):
    """The learned hierarchy beside the true one, with per-path purity (figure 2).

    ``path_matches`` names, for each learned path, the true path most of its points
    take (empty string: none)."""
    left = _tree_text(learned, path_purity, path_counts, path_matches)
    right = _tree_text(true, None, None)
    height = max(left.count("\n"), right.count("\n")) + 3
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.14 * height + 0.8))
    for ax, title, text in ((axes[0], "learned", left), (axes[1], "true", right)):
        ax.axis("off")
        ax.set_title(title, fontsize=10, loc="left")
        ax.text(0, 1, text, family="monospace", fontsize=7, va="top", transform=ax.transAxes)
    if h_error is not None:
        fig.suptitle(f"H-error {h_error}", fontsize=10)
    fig.tight_layout()
    return fig


def component_projection(
    codes: np.ndarray,
    true_paths: np.ndarray,
    assignments: np.ndarray | None = None,
    *,
    true_names: Sequence[str] | None = None,
    learned_names: Sequence[str] | None = None,
    max_points: int = 5000,
    seed: int = 0,
):
    """Codes projected on their first two principal components, coloured by true path
    (left) and by learned path or component (right; grey = discarded), with legends
    from ``true_names`` / ``learned_names`` (indexed by label) when given."""
    codes = np.asarray(codes, float)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(len(codes))[:max_points]
    x = codes[rows] - codes[rows].mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    xy = x @ vt[:2].T if vt.shape[0] >= 2 else np.c_[x[:, 0], np.zeros(len(x))]
    panels = [("true path", np.asarray(true_paths)[rows], true_names)]
    if assignments is not None:
        panels.append(("learned path (MIMOSA)", np.asarray(assignments)[rows], learned_names))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.6), squeeze=False)
    colours = plt.cm.tab10.colors
    for ax, (title, labels, names) in zip(axes[0], panels):
        for label in np.unique(labels):
            mine = labels == label
            name = "discarded" if label < 0 else (names[label] if names is not None else str(label))
            colour = "lightgrey" if label < 0 else colours[label % len(colours)]
            ax.scatter(xy[mine, 0], xy[mine, 1], s=2, color=colour, label=f"[{label}] {name}" if label >= 0 else name)
        ax.legend(fontsize=6, markerscale=3, loc="best", framealpha=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


#: summary-table columns in order, with their short headers
METRIC_LABELS = {
    "r4c": "R4c",
    "r4": "R4",
    "dci_disentanglement": "DCI-D",
    "dci_completeness": "DCI-C",
    "dci_informativeness_test": "DCI-I",
    "dci_macro_disentanglement": "DCI-D macro",
    "dci_macro_completeness": "DCI-C macro",
    "dci_micro_disentanglement": "DCI-D micro",
    "dci_micro_completeness": "DCI-C micro",
    "mig": "MIG",
    "sap": "SAP",
    "factor_vae_eval_accuracy": "FactorVAE",
    "beta_vae_eval_accuracy": "beta-VAE",
    "h_error": "H-error",
    "purity": "purity",
    "mimosa_purity": "MIMOSA purity",
    "mimosa_coverage": "MIMOSA coverage",
}


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _cell(value) -> str:
    if not _is_number(value):
        return "-"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.3f}"


def table_columns(metrics: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The :data:`METRIC_LABELS` keys that some row holds (else every numeric key)."""
    present = {k for row in metrics.values() for k, v in row.items() if _is_number(v)}
    return [c for c in METRIC_LABELS if c in present] or sorted(present)


def _table_cells(metrics: Mapping[str, Mapping[str, float]], columns: Sequence[str]) -> tuple[list, list]:
    """Header and rows of the summary table as text cells."""
    head = ["model"] + [METRIC_LABELS.get(c, c) for c in columns]
    body = [[str(model)] + [_cell(row.get(c)) for c in columns] for model, row in metrics.items()]
    return head, body


def metrics_table(metrics: Mapping[str, Mapping[str, float]], columns: Sequence[str] | None = None) -> str:
    """Markdown table, one row per model and one column per metric, padded so that it
    also reads as plain text; ``-`` where a model has no value."""
    columns = table_columns(metrics) if columns is None else list(columns)
    head, body = _table_cells(metrics, columns)
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join("-" * (w + 1) + (":" if i else "-") for i, w in enumerate(widths)) + "|"
    return "\n".join([line(head), rule, *map(line, body)])


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

    ``figures`` maps a file stem to a matplotlib figure; ``notes`` (one paragraph per
    line) follow the table. Returns the paths written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pngs = {stem: _png(fig) for stem, fig in figures.items()}
    written = {}
    for stem, data in pngs.items():
        write_atomic(out / f"{stem}.png", data)
        written[stem] = out / f"{stem}.png"
    columns = table_columns(metrics)
    paragraphs = [line for line in notes.splitlines() if line.strip()]
    write_atomic(out / "metrics.json", json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    md = [f"# {title}", "", metrics_table(metrics, columns), ""]
    md += [x for par in paragraphs for x in (par, "")]
    md += [f"![{s}]({s}.png)" for s in pngs]
    write_atomic(out / "summary.md", "\n".join(md) + "\n")
    images = "".join(
        f'<h2>{html.escape(stem.replace("_", " "))}</h2>'
        f'<img alt="{html.escape(stem)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'
        for stem, data in pngs.items()
    )
    head, body = _table_cells(metrics, columns)
    html_table = (
        "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
        + "</table>"
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "td:first-child{text-align:left}img{max-width:100%}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{html_table}"
        + "".join(f"<p>{html.escape(par)}</p>" for par in paragraphs)
        + f"{images}</body></html>"
    )
    write_atomic(out / "report.html", page)
    written.update(metrics=out / "metrics.json", summary=out / "summary.md", html=out / "report.html")
    return written


@dataclasses.dataclass
class RunEntry:
    """One trained model of a run, with what its figures need.

    ``codes``, ``factors``, ``active`` and ``paths`` are rows of the test split;
    ``train_paths``, ``assignments`` (MIMOSA's, -1 = discarded) and
    ``initial_codes`` (the smooth autoencoder's) rows of the training split.
    """

    label: str
    model: object
    codes: np.ndarray
    metrics: Mapping
    factors: np.ndarray
    active: np.ndarray
    paths: np.ndarray
    train_paths: np.ndarray
    true_hierarchy: Hierarchy
    code_hierarchy: Hierarchy | None = None
    assignments: np.ndarray | None = None
    initial_codes: np.ndarray | None = None


def _stem(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "model"


def run_figures(entries: Sequence[RunEntry], *, show_progress: bool = False) -> dict:
    """Every figure of a run's report, by file stem: per model the factor-vs-code
    histograms and the latent traversals; per hierarchical model also the learned
    hierarchy beside the true one and MIMOSA's components."""
    from tqdm.auto import tqdm

    figures = {}
    for e in tqdm(entries, desc="drawing figures", unit="model", disable=not show_progress, leave=False):
        stem = _stem(e.label)
        h = e.code_hierarchy
        code_active = None if h is None else h.activity_mask(e.codes)
        names = None if h is None else h.names
        figures[f"pairwise_{stem}"] = pairwise_histograms(
            e.factors, e.codes, factor_names=e.true_hierarchy.names, factor_active=e.active, code_active=code_active,
            per_factor=e.metrics.get("r4c_per_factor"), score_name="R4c", title=e.label, code_names=names,
        )
        if h is None:
            base = e.codes[_nearest_median(e.codes)]
            figures[f"traversals_{stem}"] = latent_traversals(e.model.decode, base, e.codes, title=e.label)
        else:
            figures[f"traversals_{stem}"] = path_traversals(e.model.decode, e.codes, h, title=e.label)
        if h is not None and e.assignments is not None:
            purity, counts, majority = path_purity(e.train_paths, e.assignments, h.num_paths)
            matches = [e.true_hierarchy.path_names[m] if m >= 0 else "" for m in majority]
            figures[f"hierarchy_{stem}"] = hierarchy_comparison(
                h, e.true_hierarchy, path_purity=purity, path_counts=counts, path_matches=matches,
                h_error=e.metrics.get("h_error"),
            )
            figures[f"components_{stem}"] = component_projection(
                e.initial_codes, e.train_paths, e.assignments,
                true_names=e.true_hierarchy.path_names, learned_names=h.path_names,
            )
    return figures
