"""Univariate predictability scores, the building block of R^4 and R^4_c.

For a pair of variables X and Y we need how well a flexible univariate model predicts
Y from X on held-out data: the coefficient of determination R^2 for a continuous Y,
the accuracy for a categorical Y (Ross & Doshi-Velez 2021, eq. 2; the authors fit
gradient-boosted trees per pair).

The default estimator is *binned*: the training rows are sorted by X and cut into bins
(training rows // 150 quantile bins, 10 to 128; see :func:`bin_edges`), and within each
bin

- a continuous Y is predicted by the least-squares line of Y on X fitted to the bin's
  training rows, with X clipped to the bin's training range (a piecewise-linear fit
  that never extrapolates). A piecewise-constant fit (the bin mean) would leave the
  variance of Y within a bin, about f'(x)^2 h^2 / 12 for Y = f(X) and bin width h, which
  caps R^2 of an exact one-to-one code near 1 - 1/B^2 with B bins; the line leaves
  about f''(x)^2 h^4 / 720. Each slope b is shrunk by max(0, 1 - var(b) / b^2), with
  var(b) the residual variance over the bin's sum of squares of X, so that a slope at
  the noise level falls to 0 and adds no variance (positive-part James-Stein).
- a categorical Y is predicted by a one-split stump: the bin is split at the point
  between two training values that maximises the number of training rows predicted
  right by the majority class on each side (no split if none gains), so that a class
  boundary inside a bin costs nothing.

An input with few distinct values gets one bin per value, and the prediction is then
the exact conditional mean (majority class) given X = x. All of this costs one sort and
a few cumulative sums per input variable and split instead of a boosting run per pair;
``python -m benchmarks.metrics_speed`` compares it with gradient-boosted trees per pair. The
``"gbt"`` estimator (scikit-learn's histogram gradient boosting) is available for
checks against the reference method.
"""
from __future__ import annotations

import numpy as np

from hier_datasets.validation import check_random_state

#: quantile bins of a continuous input: training rows // ROWS_PER_BIN, clipped to the range
ROWS_PER_BIN = 150
MIN_BINS, MAX_BINS = 10, 128
#: an input with at most max(bins, training rows // ROWS_PER_VALUE) distinct values gets
#: one bin per value
ROWS_PER_VALUE = 10
#: a categorical target with C classes is predicted from at least this many bins per class
CATEGORICAL_BINS_PER_CLASS = 2
ESTIMATORS = ("binned", "gbt")


def auto_num_bins(num_train: int) -> int:
    return int(np.clip(num_train // ROWS_PER_BIN, MIN_BINS, MAX_BINS))


def random_splits(num_rows: int, num_splits: int, test_size: float, random_state):
    """``num_splits`` random (train, test) index pairs of ``num_rows`` rows, each with
    ``test_size`` (a fraction) of them in the test part and at least one row per side:
    the splits the metrics draw (``random_state``: an integer seed or a numpy
    Generator, whose stream they consume)."""
    rng = check_random_state(random_state)
    num_test = int(np.clip(round(test_size * num_rows), 1, num_rows - 1))
    for _ in range(num_splits):
        perm = rng.permutation(num_rows)
        yield np.sort(perm[num_test:]), np.sort(perm[:num_test])


def bin_edges(x_sorted: np.ndarray, num_bins: int) -> np.ndarray:
    """Increasing bin edges for sorted training values; value v is in bin
    ``searchsorted(edges, v, side="right")``.

    An input with at most ``max(num_bins, rows // ROWS_PER_VALUE)`` distinct values gets
    one bin per value (edges half-way between neighbouring values, so an unseen value
    falls in the bin of the nearest seen one). Otherwise every value that holds more than
    a bin's share of the rows (an atom, such as the 0 of an inactive dimension) gets a
    bin of its own, and the remaining bins are quantiles of the distinct values, so that
    an atom does not swallow the bins meant for the continuous part.
    """
    n = x_sorted.size
    first = np.flatnonzero(np.r_[True, x_sorted[1:] != x_sorted[:-1]])
    uniques = x_sorted[first]
    if uniques.size <= max(num_bins, n // ROWS_PER_VALUE):
        return (uniques[1:] + uniques[:-1]) / 2
    counts = np.diff(np.r_[first, n])
    atoms = uniques[counts > n / num_bins]
    spread = np.quantile(uniques, np.linspace(0, 1, num_bins - atoms.size + 1)[1:-1])
    return np.unique(np.concatenate([spread, atoms, np.nextafter(atoms, np.inf)]))


class _Bins:
    """Sorted training values of one input cut into non-empty bins: bin k holds sorted
    positions ``start[k]:end[k]``; ``which(x)`` gives the bins of new values (a value
    between two bins goes to the one below)."""

    def __init__(self, x_sorted: np.ndarray, num_bins: int):
        self.x = x_sorted
        self.edges = bin_edges(x_sorted, num_bins)
        bounds = np.r_[0, np.searchsorted(x_sorted, self.edges, side="left"), x_sorted.size]
        filled = bounds[1:] > bounds[:-1]
        self.start, self.end = bounds[:-1][filled], bounds[1:][filled]
        self.bin = np.repeat(np.arange(self.start.size), self.end - self.start)
        self._lookup = np.maximum(np.cumsum(filled) - 1, 0)

    def which(self, x: np.ndarray) -> np.ndarray:
        return self._lookup[np.searchsorted(self.edges, x, side="right")]


def _continuous_scores(bins: _Bins, x_te, ys, y_te) -> np.ndarray:
    """Held-out R^2 of the per-bin least-squares line, for every column of y
    (``ys``: training targets in the order of ``bins.x``)."""
    counts = (bins.end - bins.start).astype(np.float64)
    mean_x = np.add.reduceat(bins.x, bins.start) / counts
    dx = bins.x - mean_x[bins.bin]
    sxx = np.add.reduceat(dx * dx, bins.start)
    mean_y = np.add.reduceat(ys, bins.start, axis=0) / counts[:, None]
    dy = ys - mean_y[bins.bin]
    sxy = np.add.reduceat(dx[:, None] * dy, bins.start, axis=0)
    low, high = bins.x[bins.start], bins.x[bins.end - 1]
    flat = (high <= low) | (sxx <= 0)  # a single value: the bin mean
    slope = np.where(flat[:, None], 0.0, sxy / np.where(flat, 1.0, sxx)[:, None])
    # shrink each slope b by max(0, 1 - var(b) / b^2): noise-level slopes fall to 0
    syy = np.add.reduceat(dy * dy, bins.start, axis=0)
    resid = np.maximum(syy - slope * sxy, 0.0) / np.maximum(counts - 2, 1)[:, None]
    var_b = resid / np.where(flat, 1.0, sxx)[:, None]
    keep = np.where(slope != 0, 1.0 - var_b / np.where(slope != 0, slope**2, 1.0), 0.0)
    slope = slope * np.where(counts[:, None] > 2, np.clip(keep, 0.0, 1.0), 1.0)
    k = bins.which(x_te)
    offset = np.clip(x_te, low[k], high[k]) - mean_x[k]
    return r2_scores(y_te, mean_y[k] + slope[k] * offset[:, None])


def r2_scores(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Column-wise R^2 = 1 - SSE / SST; 0 where the test target is constant (SST = 0)."""
    sse = np.sum((y_true - y_pred) ** 2, axis=0)
    sst = np.sum((y_true - y_true.mean(axis=0)) ** 2, axis=0)
    tiny = sst <= 1e-12 * np.maximum(1.0, np.sum(y_true**2, axis=0))
    return np.where(tiny, 0.0, 1.0 - sse / np.where(tiny, 1.0, sst))


def _categorical_score(bins: _Bins, x_te, ys, y_te, num_classes: int) -> float:
    """Held-out accuracy of a one-split stump per bin; 0 where the target is constant.

    ``ys`` (training targets in the order of ``bins.x``) and ``y_te`` are class
    indices in ``0 .. num_classes - 1``. With
    ``L_i`` / ``R_i`` the class counts left / right of sorted position i in its bin,
    the split maximises ``max_c L_i[c] + max_c R_i[c]``; a bin keeps its majority
    class when no split beats it.
    """
    if np.all(y_te == y_te[0]) and np.all(ys == y_te[0]):
        return 0.0
    n = ys.size
    cum = np.zeros((n + 1, num_classes))
    cum[np.arange(1, n + 1), ys] = 1.0
    np.cumsum(cum, axis=0, out=cum)
    start, end = bins.start[bins.bin], bins.end[bins.bin]  # per sorted position
    left = cum[:-1] - cum[start]  # rows before position i in its bin
    right = cum[end] - cum[:-1]  # rows from position i on
    gain = left.max(axis=1) + right.max(axis=1)
    valid = np.r_[False, bins.x[1:] != bins.x[:-1]] & (np.arange(n) > start)
    gain = np.where(valid, gain, -1.0)
    totals = cum[bins.end] - cum[bins.start]
    best = np.maximum.reduceat(gain, bins.start)
    split = best > totals.max(axis=1)
    # first position of each bin that reaches its best gain
    hits = np.flatnonzero(gain == best[bins.bin])
    _, first = np.unique(bins.bin[hits], return_index=True)
    pos = np.zeros(bins.start.size, dtype=np.int64)
    pos[bins.bin[hits[first]]] = hits[first]
    threshold = np.where(split, (bins.x[pos] + bins.x[np.maximum(pos - 1, 0)]) / 2, np.inf)
    below = np.where(split, left[pos].argmax(axis=1), totals.argmax(axis=1))
    above = np.where(split, right[pos].argmax(axis=1), below)
    k = bins.which(x_te)
    pred = np.where(x_te >= threshold[k], above[k], below[k])
    return float(np.mean(pred == y_te))


def _gbt_score(x_tr, x_te, y_tr, y_te, categorical: bool, seed: int, max_train: int) -> float:
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    if (categorical and np.unique(y_tr).size < 2) or (not categorical and np.ptp(y_tr) == 0):
        return 0.0
    if x_tr.size > max_train:
        keep = np.random.default_rng(seed).choice(x_tr.size, max_train, replace=False)
        x_tr, y_tr = x_tr[keep], y_tr[keep]
    from threadpoolctl import threadpool_limits

    kwargs = dict(max_iter=50, max_leaf_nodes=15, early_stopping=False, random_state=seed)
    # one feature and a few thousand rows: threads cost more than they save
    with threadpool_limits(limits=1, user_api="openmp"):
        if categorical:
            model = HistGradientBoostingClassifier(**kwargs).fit(x_tr[:, None], y_tr)
            return float(np.mean(model.predict(x_te[:, None]) == y_te))
        model = HistGradientBoostingRegressor(**kwargs).fit(x_tr[:, None], y_tr)
        return float(r2_scores(y_te[:, None], model.predict(x_te[:, None])[:, None])[0])


def directed_scores(
    inputs: np.ndarray,
    targets: np.ndarray,
    target_categorical: np.ndarray,
    splits,
    *,
    num_bins="auto",
    estimator: str = "binned",
    seed: int = 0,
    max_train: int = 5000,
) -> np.ndarray:
    """(n_inputs, n_targets) held-out predictability of each target from each input.

    Scores (R^2 for continuous targets, accuracy for categorical ones) are averaged
    over ``splits``, a sequence of (train, test) row-index pairs.
    """
    splits = list(splits)
    n_in, n_out = inputs.shape[1], targets.shape[1]
    total = np.zeros((n_in, n_out))
    cont = np.flatnonzero(~target_categorical)
    cat = np.flatnonzero(target_categorical)
    # categorical targets as class indices 0 .. C-1
    classes = {j: np.unique(targets[:, j], return_inverse=True) for j in cat}
    # every input sorted once; a split's training rows are then picked in sorted order
    orders = [np.argsort(inputs[:, i]) for i in range(n_in)] if estimator == "binned" else []
    for s, (tr, te) in enumerate(splits):
        nbins = auto_num_bins(tr.size) if num_bins == "auto" else int(num_bins)
        if estimator == "gbt":
            for i in range(n_in):
                for j in range(n_out):
                    total[i, j] += _gbt_score(
                        inputs[tr, i], inputs[te, i], targets[tr, j], targets[te, j],
                        bool(target_categorical[j]), seed + s, max_train,
                    )
            continue
        in_train = np.zeros(inputs.shape[0], dtype=bool)
        in_train[tr] = True
        y_te = targets[te][:, cont]
        for i in range(n_in):
            rows = orders[i][in_train[orders[i]]]  # training rows, sorted by input i
            bins = _Bins(inputs[rows, i], nbins)
            x_te = inputs[te, i]
            if cont.size:
                total[i, cont] += _continuous_scores(bins, x_te, targets[rows][:, cont], y_te)
            for j in cat:
                values, ids = classes[j]
                per_class = max(nbins, CATEGORICAL_BINS_PER_CLASS * values.size)
                b = bins if per_class == nbins else _Bins(bins.x, per_class)
                total[i, j] += _categorical_score(b, x_te, ids[rows], ids[te], values.size)
    return total / len(splits)


def correspondence(
    a: np.ndarray,
    b: np.ndarray,
    a_categorical: np.ndarray,
    b_categorical: np.ndarray,
    rng: np.random.Generator,
    *,
    num_splits: int = 5,
    test_size: float = 0.25,
    num_bins="auto",
    estimator: str = "binned",
    max_train: int = 5000,
) -> np.ndarray:
    """(a columns, b columns) matrix of R^4(a_i <-> b_j), paper eq. 2.

    R^4(X <-> Y) = sqrt(max(0, R^2(X -> Y)) * max(0, R^2(Y -> X))), each direction's
    score averaged over the same ``num_splits`` random train/test splits.
    """
    splits = list(random_splits(a.shape[0], num_splits, test_size, rng))
    seed = int(rng.integers(2**31 - 1))
    kw = dict(num_bins=num_bins, estimator=estimator, seed=seed, max_train=max_train)
    forward = directed_scores(a, b, b_categorical, splits, **kw)
    backward = directed_scores(b, a, a_categorical, splits, **kw)
    return np.sqrt(np.maximum(forward, 0.0) * np.maximum(backward, 0.0).T)
