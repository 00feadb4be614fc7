"""Unsupervised disentanglement ranking (Duan et al. 2020), disentanglement_lib's
scikit-learn version: a model whose codes other models reproduce one-to-one ranks high."""
from __future__ import annotations

import numpy as np

from hier_metrics._validation import check_array, check_random_state

__all__ = ["udr", "relative_strength"]

CORRELATIONS = ("lasso", "spearman")


def relative_strength(matrix) -> float:
    """Relative-strength score of a non-negative similarity matrix R (Duan et al. 2020,
    section 3, eq. 3): ``(mean_b max_a R_ab^2 / sum_a R_ab + mean_a max_b R_ab^2 / sum_b R_ab) / 2``,
    a 0/0 term counting 0. 1 for a permutation (one-to-one) matrix.

    >>> relative_strength(np.eye(3)), relative_strength(np.ones((2, 2)))
    (1.0, 0.5)
    """
    r = np.asarray(matrix, dtype=np.float64)
    if r.ndim != 2 or r.size == 0:
        return 0.0

    def side(axis):
        total = r.sum(axis=axis)
        return np.mean(np.where(total > 0, r.max(axis=axis) ** 2 / np.where(total > 0, total, 1.0), 0.0))

    return float((side(0) + side(1)) / 2)


def _spearman(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    ra, rb = rankdata(a, axis=0), rankdata(b, axis=0)
    ra, rb = ra - ra.mean(axis=0), rb - rb.mean(axis=0)
    na, nb = np.sqrt((ra**2).sum(axis=0)), np.sqrt((rb**2).sum(axis=0))
    denom = np.outer(na, nb)
    return np.abs(np.where(denom > 0, ra.T @ rb / np.where(denom > 0, denom, 1.0), 0.0))


def udr(
    representations,
    *,
    kl=None,
    correlation: str = "lasso",
    kl_threshold: float = 0.01,
    alpha: float = 0.1,
    random_state=0,
) -> dict:
    """UDR (Duan et al. 2020, section 3) of each of several models' codes of the same inputs.

    Each model's codes are standardised (a constant code becomes 0). For every ordered
    pair of models (i, j) a similarity R between the codes of i (rows) and of j
    (columns): the absolute coefficients of a Lasso regression (``alpha``, 0.1 as in
    disentanglement_lib) predicting j's codes from i's, or the absolute Spearman
    correlations. With ``kl`` (each model's mean KL divergence per latent, from the
    encoder), latents with KL at most 0.01 are zeroed and those at most
    ``kl_threshold`` left out of R (the paper's filter of uninformative latents). The
    pair's score is :func:`relative_strength` of R; model i's UDR is the median of
    its scores as the target (pairs (j, i), j != i).

    UDR needs no ground truth, so the data's hierarchy does not enter; models that
    found the same hierarchical code agree, whatever the branches.

    Args:
      representations: a sequence of at least two (n, D) arrays, the same rows (inputs)
        in the same order, the same width D.
      kl: optional sequence of (D,) mean KL divergences per latent, one per model.
      correlation: ``"lasso"`` or ``"spearman"``.
      random_state: integer seed or Generator (the Lasso's seed).

    Returns:
      ``{"score", "model_scores", "pairwise_disentanglement_scores", "raw_correlations"}``:
      per-model UDR (list), the (M, M) pair scores with zero diagonal, the
      (M, M, D, D) similarity matrices; ``score`` is the mean of the model scores.

    Raises:
      ValueError: fewer than two models, arrays of different shapes or not finite,
        a bad ``kl`` or ``correlation``.
    """
    reps = [check_array(r, f"representations[{i}]") for i, r in enumerate(representations)]
    if len(reps) < 2:
        raise ValueError(f"udr compares models: representations needs at least two arrays, got {len(reps)}")
    if any(r.shape != reps[0].shape for r in reps):
        raise ValueError(f"representations must share one shape (same inputs, same width), got {[r.shape for r in reps]}")
    if correlation not in CORRELATIONS:
        raise ValueError(f"correlation must be one of {list(CORRELATIONS)}, got {correlation!r}")
    rng = check_random_state(random_state)
    num_models, dim = len(reps), reps[0].shape[1]
    if kl is None:
        kl = [np.full(dim, np.inf)] * num_models
    kl = [np.asarray(k, dtype=np.float64) for k in kl]
    if len(kl) != num_models or any(k.shape != (dim,) or np.isnan(k).any() for k in kl):
        raise ValueError(f"kl must give {num_models} arrays of {dim} values (one per model and latent)")
    scaled, keep = [], []
    for r, k in zip(reps, kl):
        std = r.std(axis=0)
        z = (r - r.mean(axis=0)) / np.where(std > 0, std, 1.0)
        scaled.append(z * (k > 0.01))
        keep.append(k > kl_threshold)
    raw = np.zeros((num_models, num_models, dim, dim))
    pairs = np.zeros((num_models, num_models))
    for i in range(num_models):
        for j in range(num_models):
            if i == j:
                continue
            if correlation == "lasso":
                from sklearn.linear_model import Lasso

                model = Lasso(alpha=alpha, random_state=int(rng.integers(2**31 - 1)))
                model.fit(scaled[i], scaled[j])
                r = np.abs(np.atleast_2d(model.coef_)).T
            else:
                r = _spearman(scaled[i], scaled[j])
            raw[i, j] = r
            pairs[i, j] = relative_strength(r[np.ix_(keep[i], keep[j])])
    model_scores = [float(np.median(np.delete(pairs[:, i], i))) for i in range(num_models)]
    return {
        "score": float(np.mean(model_scores)),
        "model_scores": model_scores,
        "pairwise_disentanglement_scores": pairs,
        "raw_correlations": raw,
    }
