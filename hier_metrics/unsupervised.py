"""Scores of the codes alone (disentanglement_lib's "unsupervised" metrics): how far the
codes are from independent, by a Gaussian fit and by histogram mutual information."""
from __future__ import annotations

import numpy as np

from hier_metrics._validation import check_array, check_positive_int
from hier_metrics.mig import discrete_mutual_info, histogram_discretize

__all__ = [
    "gaussian_total_correlation",
    "gaussian_wasserstein_correlation",
    "mutual_info_score",
    "unsupervised_scores",
]


def _covariance(codes) -> np.ndarray:
    codes = check_array(codes, "codes")
    cov = np.atleast_2d(np.cov(codes, rowvar=False))
    return cov[np.ix_(np.diag(cov) > 0, np.diag(cov) > 0)]


def gaussian_total_correlation(codes) -> float:
    """Total correlation of the Gaussian with the codes' covariance Sigma (sample, ddof 1):
    ``KL(N(0, Sigma) || N(0, diag Sigma)) = (sum_j log Sigma_jj - log det Sigma) / 2``
    (Locatello et al. 2019, section 3; Watanabe 1960). 0 for uncorrelated codes,
    infinite for linearly dependent ones; lower is more independent. Constant codes
    are independent of the rest and are left out.

    >>> import numpy as np
    >>> z = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
    >>> gaussian_total_correlation(z)
    0.0
    """
    cov = _covariance(codes)
    if cov.size == 0:
        return 0.0
    sign, logdet = np.linalg.slogdet(cov)
    if sign <= 0:
        return float("inf")
    return float(0.5 * (np.sum(np.log(np.diag(cov))) - logdet))


def gaussian_wasserstein_correlation(codes, *, normalize: bool = False) -> float:
    """Squared 2-Wasserstein distance between N(0, Sigma) and N(0, diag Sigma):
    ``2 tr Sigma - 2 tr (D^(1/2) Sigma D^(1/2))^(1/2)`` with D = diag Sigma (Locatello
    et al. 2019, section 3; Givens & Shortt 1984 for the Gaussian W2). 0 for
    uncorrelated codes; with ``normalize`` divided by tr Sigma, so in [0, 2) and free of
    the codes' scale. Constant codes are left out.
    """
    cov = _covariance(codes)
    if cov.size == 0:
        return 0.0
    root_d = np.sqrt(np.diag(cov))
    eig = np.linalg.eigvalsh(root_d[:, None] * cov * root_d[None, :])
    value = float(2 * np.trace(cov) - 2 * np.sum(np.sqrt(np.clip(eig, 0, None))))
    return value / float(np.trace(cov)) if normalize else value


def mutual_info_score(codes, *, num_bins: int = 20) -> float:
    """Mean mutual information (nats) between distinct pairs of codes, each cut into
    ``num_bins`` equal-width bins: ``sum_{i != j} I(z_i; z_j) / (D^2 - D)``. 0 for
    independent codes (up to the estimator's bias); 0 for a single code."""
    codes = check_array(codes, "codes")
    num_bins = check_positive_int(num_bins, "num_bins", minimum=2)
    d = codes.shape[1]
    if d < 2:
        return 0.0
    binned = histogram_discretize(codes, num_bins)
    info = discrete_mutual_info(binned, binned)
    np.fill_diagonal(info, 0.0)
    return float(info.sum() / (d * d - d))


def unsupervised_scores(codes, *, num_bins: int = 20) -> dict:
    """All of disentanglement_lib's unsupervised scores of (n, D) codes.

    These look at the codes only, so the data's hierarchy does not enter: on
    hierarchical data the codes of a branch are constant (or at their inactive value)
    wherever the branch is off, which correlates them with the code that switches the
    branch, so a perfect hierarchical code is *not* independent and need not score 0.

    Returns:
      ``{"score", "gaussian_total_correlation", "gaussian_wasserstein_correlation",
      "gaussian_wasserstein_correlation_norm", "mutual_info_score"}``; ``score`` is the
      Gaussian total correlation (lower is more independent).

    Raises:
      ValueError: codes that are not a finite 2-D array with two rows, or a bad
        ``num_bins``.
    """
    codes = check_array(codes, "codes")
    tc = gaussian_total_correlation(codes)
    wc = gaussian_wasserstein_correlation(codes)
    wc_norm = gaussian_wasserstein_correlation(codes, normalize=True)
    return {
        "score": tc,
        "gaussian_total_correlation": tc,
        "gaussian_wasserstein_correlation": wc,
        "gaussian_wasserstein_correlation_norm": wc_norm,
        "mutual_info_score": mutual_info_score(codes, num_bins=num_bins),
    }
