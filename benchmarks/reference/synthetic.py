"""Smoothly embedded ground-truth data: codes with known structure for testing MIMOSA.

The initial smooth autoencoder of the paper maps each dataset onto a union of
curved manifolds in ``initial_dim`` dimensions. :func:`embedded_chopsticks` builds
such codes without training anything: Chopsticks series are a linear function of
their factors, so projecting them onto their span (whitened) recovers flat pieces,
which a smooth invertible map then bends.
"""
from __future__ import annotations

import numpy as np

from hier_datasets import ground_truth
from hier_datasets.hierarchy import Hierarchy
from hier_datasets.validation import check_seed

__all__ = ["embedded_chopsticks"]


def embedded_chopsticks(
    config: str, n: int, random_state: int = 0, dim: int | None = None, bend: float = 0.3
) -> tuple[np.ndarray, np.ndarray, Hierarchy]:
    """``(codes, true_paths, hierarchy)`` for ``n`` samples of a Chopsticks config.

    The series are centred and projected onto the directions they span, each
    whitened to unit variance, zero-padded to ``dim`` dimensions (default: the
    paper's initial dimensionality, ``paper_settings(config)["initial_dim"]``), and passed through
    ``z + bend * tanh(z @ W)`` with a fixed random ``W`` of scale ``1/sqrt(dim)``.
    ``true_paths`` holds each sample's ground-truth path index. A config whose series
    span more directions than ``dim`` raises ValueError (depth-3 ``either`` spans 6,
    one more than the paper's autoencoder width of 5: pass ``dim=6``). ``random_state``
    (an integer seed or a numpy Generator) draws
    the samples and ``W``.
    """
    from hier_models._mimosa import paper_settings

    if dim is None:
        try:
            dim = paper_settings(config)["initial_dim"]
        except ValueError as err:
            raise ValueError(f"no default dim for {config!r}; pass dim= ({err})") from None
    seed = check_seed(random_state)
    gt = ground_truth(config)
    factors, series = gt.sample(n, seed)
    centred = series - series.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    rank = int(np.sum(s > 1e-4 * s[0]))
    if rank > dim:
        raise ValueError(f"{config} spans {rank} dimensions, more than dim={dim}")
    z = np.zeros((n, dim))
    z[:, :rank] = centred @ vt[:rank].T
    z[:, :rank] /= z[:, :rank].std(axis=0)
    mix = np.random.default_rng(seed + 1).standard_normal((dim, dim)) / np.sqrt(dim)
    return z + bend * np.tanh(z @ mix), gt.paths(factors), gt.hierarchy
