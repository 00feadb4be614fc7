"""Univariate predictability scores, the building block of R^4 and R^4_c.

For a pair of variables X and Y we need how well a flexible univariate model predicts
Y from X on held-out data: the coefficient of determination R^2 for a continuous Y,
the accuracy for a categorical Y (Ross & Doshi-Velez 2021, eq. 2).

The default estimator is a *binned conditional mean*: X is cut into quantile bins on
the training rows and the prediction in a bin is the training mean of Y there (the
majority class for a categorical Y). With one input feature this is what a regression
tree ensemble converges to -- a piecewise-constant estimate of E[Y | X] -- and it
costs one sort and one scatter-add per variable instead of a boosting run per pair.
``benchmarks/metrics_speed.py`` compares it with gradient-boosted trees per pair.
The ``"gbt"`` estimator (scikit-learn's histogram gradient boosting) is available
for checks against the reference method.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

#: bins of the binned estimator: training rows // ROWS_PER_BIN, clipped to the range
ROWS_PER_BIN = 60
MIN_BINS, MAX_BINS = 10, 128
ESTIMATORS = ("binned", "gbt")


def auto_num_bins(num_train: int) -> int:
    return int(np.clip(num_train // ROWS_PER_BIN, MIN_BINS, MAX_BINS))


def random_splits(num_rows: int, num_splits: int, test_size: float, rng: np.random.Generator):
    """``num_splits`` random (train, test) index pairs, each with at least one row per side."""
    num_test = int(np.clip(round(test_size * num_rows), 1, num_rows - 1))
    for _ in range(num_splits):
        perm = rng.permutation(num_rows)
        yield np.sort(perm[num_test:]), np.sort(perm[:num_test])


def bin_index(x_train: np.ndarray, x_test: np.ndarray, num_bins: int):
    """Bin ids of the train and test values and the number of bins.

    A variable with at most ``num_bins`` distinct training values gets one bin per value
    (so categorical inputs are used as they are). Otherwise every value that holds more
    than a bin's share of the rows (an atom, such as the 0 of an inactive dimension)
    gets a bin of its own, and the remaining bins are quantiles of the distinct values,
    so that an atom does not swallow the bins meant for the continuous part.
    """
    uniques, counts = np.unique(x_train, return_counts=True)
    if uniques.size <= num_bins:
        edges = (uniques[1:] + uniques[:-1]) / 2
    else:
        atoms = uniques[counts > x_train.size / num_bins]
        spread = np.quantile(uniques, np.linspace(0, 1, num_bins - atoms.size + 1)[1:-1])
        edges = np.unique(np.concatenate([spread, atoms, np.nextafter(atoms, np.inf)]))
    return (
        np.searchsorted(edges, x_train, side="right"),
        np.searchsorted(edges, x_test, side="right"),
        edges.size + 1,
    )


def _continuous_scores(bins_tr, bins_te, nb, y_tr, y_te):
    """R^2 on the test rows of the per-bin training mean, for every column of y."""
    onehot = sparse.csr_matrix((np.ones(bins_tr.size), (bins_tr, np.arange(bins_tr.size))), shape=(nb, bins_tr.size))
    counts = np.asarray(onehot.sum(axis=1)).ravel()
    sums = onehot @ y_tr
    means = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], y_tr.mean(axis=0))
    pred = means[bins_te]
    return r2_scores(y_te, pred)


def r2_scores(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Column-wise R^2 = 1 - SSE / SST; 0 where the test target is constant (SST = 0)."""
    sse = np.sum((y_true - y_pred) ** 2, axis=0)
    sst = np.sum((y_true - y_true.mean(axis=0)) ** 2, axis=0)
    tiny = sst <= 1e-12 * np.maximum(1.0, np.sum(y_true**2, axis=0))
    return np.where(tiny, 0.0, 1.0 - sse / np.where(tiny, 1.0, sst))


def _categorical_score(bins_tr, bins_te, nb, y_tr, y_te):
    """Test accuracy of the per-bin majority class; 0 where the target is constant."""
    if np.all(y_te == y_te[0]) and np.all(y_tr == y_te[0]):
        return 0.0
    classes, codes = np.unique(y_tr, return_inverse=True)
    table = np.bincount(bins_tr * classes.size + codes, minlength=nb * classes.size).reshape(nb, classes.size)
    majority = np.argmax(np.bincount(codes, minlength=classes.size))
    best = np.where(table.sum(axis=1) > 0, table.argmax(axis=1), majority)
    return float(np.mean(classes[best[bins_te]] == y_te))


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
    for s, (tr, te) in enumerate(splits):
        nbins = auto_num_bins(tr.size) if num_bins == "auto" else int(num_bins)
        for i in range(n_in):
            x_tr, x_te = inputs[tr, i], inputs[te, i]
            if estimator == "gbt":
                for j in range(n_out):
                    total[i, j] += _gbt_score(
                        x_tr, x_te, targets[tr, j], targets[te, j], bool(target_categorical[j]), seed + s, max_train
                    )
                continue
            b_tr, b_te, nb = bin_index(x_tr, x_te, nbins)
            if cont.size:
                total[i, cont] += _continuous_scores(b_tr, b_te, nb, targets[tr][:, cont], targets[te][:, cont])
            for j in cat:
                total[i, j] += _categorical_score(b_tr, b_te, nb, targets[tr, j].astype(np.int64), targets[te, j])
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
