"""Figures of a run's report (Ross & Doshi-Velez 2021, figures 2, 12 and 13).

Every figure function takes numpy arrays and returns a matplotlib ``Figure``
(object-oriented: no pyplot state, no backend chosen on import);
:func:`run_figures` draws all of them for the models of a run (:class:`RunEntry`)
and :func:`png_bytes` renders one with the Agg canvas, the one place a backend is
chosen. matplotlib is imported when the first figure is drawn.
"""
from __future__ import annotations

import dataclasses
import io
import re
from typing import Callable, Mapping, Sequence

import numpy as np

import hier_metrics
from hier_datasets.hierarchy import Hierarchy
from hier_models.progress import progress

__all__ = [
    "RunEntry",
    "component_projection",
    "hierarchy_comparison",
    "latent_traversals",
    "pairwise_histograms",
    "path_purity",
    "path_traversals",
    "png_bytes",
    "run_figures",
]


def _subplots(rows: int, cols: int, figsize):
    """A new ``Figure`` and its (rows, cols) array of axes."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(rows, cols, squeeze=False)


def _colormap(name: str):
    import matplotlib

    return matplotlib.colormaps[name]


def png_bytes(fig, dpi: int = 110) -> bytes:
    """``fig`` rendered as PNG by the Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # the figure's canvas from now on
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


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
    fig, axes = _subplots(k, d, (1.1 * d + 1.6, 1.0 * k + 0.6))
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
        fig, axes = _subplots(len(rows), cols, (3 * cols, 2.2 * len(rows)))
        colours = _colormap("viridis")(np.linspace(0, 1, steps))
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
        lines = [(label if k == 0 else "", j, sweep)
                 for label, dims, sweeps in groups for k, (j, sweep) in enumerate(zip(dims, sweeps))]
        fig, axes = _subplots(len(lines), steps, (steps * 0.9 + 1.2, len(lines) * 0.95))
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
    """Per learned path: purity (:func:`hier_metrics.purity` of the points assigned to
    it: the share on its most common true path), number of points, and that most
    common true path (-1 for an empty path). Points with ``pred_paths == -1``
    (discarded) are left out; the count-weighted mean of the purities is
    :func:`hier_metrics.purity` of all points."""
    true = np.asarray(true_paths, np.int64)
    pred = np.asarray(pred_paths, np.int64)
    if true.shape != pred.shape or true.ndim != 1:
        raise ValueError(f"true_paths and pred_paths must be 1-D of one length, got {true.shape} and {pred.shape}")
    counts = np.bincount(pred[pred >= 0], minlength=num_paths)[:num_paths]
    purity, majority = np.zeros(num_paths), np.full(num_paths, -1, np.int64)
    for p in np.flatnonzero(counts):
        mine = pred == p
        purity[p] = hier_metrics.purity(true[mine], pred[mine])
        majority[p] = np.bincount(true[mine]).argmax()
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
    fig, axes = _subplots(1, 2, (12, 0.14 * height + 0.8))
    for ax, title, text in ((axes[0, 0], "learned", left), (axes[0, 1], "true", right)):
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
    fig, axes = _subplots(1, len(panels), (5.5 * len(panels), 4.6))
    colours = _colormap("tab10").colors
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
    figures = {}
    for e in progress(entries, enabled=show_progress, desc="drawing figures", unit="model"):
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
