"""The paper's model-selection rule, on training losses alone.

Ross & Doshi-Velez (2021), section 6 and appendix A.1, train COFHAE at every point of
a hyperparameter grid and keep, "among the third of runs with the lowest assignment
loss, the one with the lowest training reconstruction error". The rule needs no
ground truth: only each configuration's training reconstruction loss ``L_x`` and
assignment loss ``L_a``.

- :func:`paper_rule` picks one configuration;
- :func:`rule_ranking` orders them all, best first, so that a schedule can keep the
  best few (successive halving, :func:`hier_models.hierarchical.successive_halving`):
  the configurations eligible under the rule (the ``eligible`` lowest ``L_a``) by
  ``L_x``, then the others by ``L_x``. Its first entry is :func:`paper_rule`'s choice.
"""
from __future__ import annotations

import numpy as np

__all__ = ["paper_rule", "rule_ranking"]


def _losses(reconstruction, assignment) -> tuple[np.ndarray, np.ndarray]:
    lx = np.asarray(reconstruction, dtype=float)
    la = np.asarray(assignment, dtype=float)
    if lx.ndim != 1 or la.shape != lx.shape or lx.size == 0:
        raise ValueError(
            "reconstruction and assignment must be 1-D arrays of one loss per configuration, of equal length, "
            f"got shapes {lx.shape} and {la.shape}"
        )
    if not (np.isfinite(lx).all() and np.isfinite(la).all()):
        raise ValueError("reconstruction and assignment losses must be finite (a diverged run has no place in the rule)")
    return lx, la


def rule_ranking(reconstruction, assignment, *, eligible: int | None = None) -> np.ndarray:
    """Configuration indices ordered best first by the paper's rule.

    Args:
      reconstruction: (n,) each configuration's training reconstruction loss ``L_x``.
      assignment: (n,) each configuration's training assignment loss ``L_a``.
      eligible: how many configurations, those with the lowest ``L_a``, the rule may
        choose from; default ``max(1, n // 3)``, the paper's third. Successive halving
        passes the third of the *whole grid*, so that once only that many survive, they
        are ranked by ``L_x`` alone.

    Returns:
      (n,) int array: the ``eligible`` lowest-``L_a`` configurations sorted by ``L_x``,
      then the rest sorted by ``L_x`` (ties keep index order).
    """
    lx, la = _losses(reconstruction, assignment)
    k = max(1, len(lx) // 3) if eligible is None else int(eligible)
    if k < 1:
        raise ValueError(f"eligible must be at least 1, got {eligible}")
    chosen = np.zeros(len(lx), bool)
    chosen[np.argsort(la, kind="stable")[: min(k, len(lx))]] = True
    # primary key: not eligible; secondary: L_x
    return np.lexsort((lx, ~chosen))


def paper_rule(reconstruction, assignment) -> int:
    """Index of the configuration the paper keeps: among the third with the lowest
    assignment loss (at least one), the one with the lowest reconstruction loss.

    >>> paper_rule([5.0, 1.0, 3.0, 0.5, 2.0, 4.0], [0.1, 0.9, 0.2, 0.8, 0.3, 0.7])
    2
    """
    return int(rule_ranking(reconstruction, assignment)[0])
