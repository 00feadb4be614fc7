"""Scores that intervene on the generative process: the FactorVAE score (Kim & Mnih
2018) and the beta-VAE score (Higgins et al. 2017), with disentanglement_lib's
defaults.

Both need batches of observations that share the value of one factor. On a
hierarchical dataset a factor only has a value where it is active, so a batch that
fixes factor k is drawn from the rows where k is active (its ancestors' categorical
choices hold), and fixing a categorical factor keeps only rows with the same option.

``ground_truth`` is what ``hier_datasets.ground_truth(name)`` returns, or any object
with ``sample_factors(n, rng)`` and ``observations_from_factors(factors, rng)`` (and
optionally ``hierarchy``; without one every factor is a free continuous variable).
"""
from __future__ import annotations

import numpy as np

from hier_metrics._validation import check_positive_int, check_random_state

__all__ = ["factor_vae_score", "beta_vae_score"]

#: observations passed to the representation function per call
ENCODE_CHUNK = 8192
_MAX_ROUNDS = 200


class _Sampler:
    """Draws factor rows on which a given factor is active, optionally with given values."""

    def __init__(self, ground_truth, rng: np.random.Generator):
        for attr in ("sample_factors", "observations_from_factors"):
            if not callable(getattr(ground_truth, attr, None)):
                raise ValueError(
                    f"ground_truth must provide sample_factors(n, rng) and observations_from_factors(factors, rng); "
                    f"{type(ground_truth).__name__} has no {attr}"
                )
        self.gt, self.rng = ground_truth, rng
        probe = np.asarray(ground_truth.sample_factors(2, rng), dtype=np.float64)
        if probe.ndim != 2:
            raise ValueError(f"ground_truth.sample_factors must return a 2-D array, got shape {probe.shape}")
        self.num_factors = probe.shape[1]
        h = getattr(ground_truth, "hierarchy", None)
        if h is not None:
            if h.num_dims != self.num_factors:
                raise ValueError(f"ground_truth.hierarchy has {h.num_dims} dimensions but factors have {self.num_factors}")
            self.conditions = [list(c) for c in h.conditions]
            self.categorical = np.asarray(h.is_categorical, dtype=bool)
        else:
            self.conditions = [[] for _ in range(self.num_factors)]
            self.categorical = np.zeros(self.num_factors, dtype=bool)

    def draw(self, k: int, m: int, values: np.ndarray | None = None) -> np.ndarray:
        """``m`` factor rows with factor ``k`` active (and equal to ``values`` if given)."""
        out = np.empty((m, self.num_factors))
        todo = np.arange(m)
        rate = 1.0
        for _ in range(_MAX_ROUNDS):
            if todo.size == 0:
                break
            size = int(min(200_000, max(64, 1.5 * todo.size / max(rate, 1e-3))))
            cand = np.asarray(self.gt.sample_factors(size, self.rng), dtype=np.float64)
            ok = np.ones(size, dtype=bool)
            for c, option in self.conditions[k]:
                ok &= cand[:, c] == option
            cand = cand[ok]
            rate = max(ok.mean(), 1e-3)
            if values is not None and self.categorical[k]:
                left = []
                for value in np.unique(values[todo]):
                    slots = todo[values[todo] == value]
                    pool = cand[cand[:, k] == value]
                    take = min(len(pool), slots.size)
                    out[slots[:take]] = pool[:take]
                    left.append(slots[take:])
                    rate = min(rate, max(len(pool) / size, 1e-3))
                todo = np.concatenate(left)
            else:
                take = min(len(cand), todo.size)
                out[todo[:take]] = cand[:take]
                todo = todo[take:]
        if todo.size:
            raise ValueError(f"ground_truth: could not draw rows with factor {k} active and the required values")
        if values is not None and not self.categorical[k]:
            out[:, k] = values
        return out


def _encode(ground_truth, representation_function, factors: np.ndarray, rng, width: int | None = None) -> np.ndarray:
    chunks = []
    for start in range(0, len(factors), ENCODE_CHUNK):
        obs = ground_truth.observations_from_factors(factors[start : start + ENCODE_CHUNK], rng)
        rep = np.asarray(representation_function(obs), dtype=np.float64)
        if rep.ndim == 1:
            rep = rep[:, None]
        if rep.ndim != 2 or rep.shape[0] != len(obs):
            raise ValueError(
                f"representation_function must return one row per observation ({len(obs)}), got shape {rep.shape}"
            )
        if not np.all(np.isfinite(rep)):
            raise ValueError("representation_function returned NaN or infinite values")
        if width is not None and rep.shape[1] != width:
            raise ValueError(f"representation_function returned {rep.shape[1]} dimensions, earlier {width}")
        width = rep.shape[1]
        chunks.append(rep)
    return np.concatenate(chunks)


def _fixed_factor_batches(sampler: _Sampler, ks: np.ndarray, batch_size: int) -> np.ndarray:
    """(len(ks) * batch_size, K) rows; batch b shares the value of factor ks[b]."""
    rows = np.empty((len(ks), batch_size, sampler.num_factors))
    for k in np.unique(ks):
        where = np.flatnonzero(ks == k)
        refs = sampler.draw(int(k), where.size)[:, k]
        rows[where] = sampler.draw(int(k), where.size * batch_size, np.repeat(refs, batch_size)).reshape(
            where.size, batch_size, -1
        )
    return rows.reshape(-1, sampler.num_factors)


def _check_common(representation_function, batch_size, num_train, num_eval):
    if not callable(representation_function):
        raise ValueError(f"representation_function must be callable, got {type(representation_function).__name__}")
    check_positive_int(batch_size, "batch_size", minimum=2)
    check_positive_int(num_train, "num_train")
    check_positive_int(num_eval, "num_eval")


def factor_vae_score(
    ground_truth,
    representation_function,
    *,
    random_state=0,
    batch_size: int = 64,
    num_train: int = 10000,
    num_eval: int = 5000,
    num_variance_estimate: int = 10000,
    prune_threshold: float = 0.05,
) -> dict:
    """FactorVAE score (Kim & Mnih 2018), disentanglement_lib's procedure.

    1. Global variance of each code over ``num_variance_estimate`` random samples;
       codes with standard deviation below ``prune_threshold`` are inactive.
    2. Each vote: pick a factor k uniformly, draw a batch of ``batch_size`` samples
       that share the value of k, and vote for the active code with the smallest
       variance relative to its global variance: ``argmin_d Var_batch(z_d) / Var(z_d)``.
    3. A majority-vote classifier maps each code to the factor it was voted for most
       on ``num_train`` votes; accuracy of that classifier on the training votes and on
       ``num_eval`` fresh votes.

    On hierarchical data, fixing a factor fixes its branch, so codes of the other
    branches are constant in the batch too; ties go to the first code, as with
    disentanglement_lib's ``argmin``.

    Returns:
      ``{"train_accuracy", "eval_accuracy", "num_active_dims"}``; ``num_active_dims``
      counts the codes that survived pruning. With no active code both accuracies are 0.
    """
    _check_common(representation_function, batch_size, num_train, num_eval)
    check_positive_int(num_variance_estimate, "num_variance_estimate", minimum=2)
    if not isinstance(prune_threshold, (int, float)) or not np.isfinite(prune_threshold) or prune_threshold < 0:
        raise ValueError(f"prune_threshold must be a finite number >= 0, got {prune_threshold!r}")
    rng = check_random_state(random_state)
    sampler = _Sampler(ground_truth, rng)
    reps = _encode(ground_truth, representation_function, sampler.gt.sample_factors(num_variance_estimate, rng), rng)
    global_var = np.var(reps, axis=0, ddof=1)
    active = np.sqrt(global_var) >= prune_threshold
    if not active.any():
        return {"train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0}

    def votes(num: int) -> np.ndarray:
        table = np.zeros((sampler.num_factors, int(active.sum())), dtype=np.int64)
        per_chunk = max(1, ENCODE_CHUNK // batch_size)
        for start in range(0, num, per_chunk):
            ks = rng.integers(sampler.num_factors, size=min(per_chunk, num - start))
            rows = _fixed_factor_batches(sampler, ks, batch_size)
            z = _encode(ground_truth, representation_function, rows, rng, reps.shape[1])
            local = np.var(z.reshape(len(ks), batch_size, -1), axis=1, ddof=1)
            best = np.argmin(local[:, active] / global_var[active], axis=1)
            np.add.at(table, (ks, best), 1)
        return table

    train_votes, eval_votes = votes(num_train), votes(num_eval)
    classifier = np.argmax(train_votes, axis=0)
    columns = np.arange(train_votes.shape[1])
    return {
        "train_accuracy": float(train_votes[classifier, columns].sum() / train_votes.sum()),
        "eval_accuracy": float(eval_votes[classifier, columns].sum() / eval_votes.sum()),
        "num_active_dims": int(active.sum()),
    }


def beta_vae_score(
    ground_truth,
    representation_function,
    *,
    random_state=0,
    batch_size: int = 64,
    num_train: int = 10000,
    num_eval: int = 5000,
) -> dict:
    """beta-VAE score (Higgins et al. 2017), disentanglement_lib's procedure.

    Each point: pick a factor k uniformly, draw ``batch_size`` pairs of samples where
    both members share the value of k, and take the mean absolute difference of their
    codes, ``mean_b |z(x1_b) - z(x2_b)|``, as features labelled k. A logistic
    regression is fitted on ``num_train`` points and scored on them and on
    ``num_eval`` fresh points.

    Returns:
      ``{"train_accuracy", "eval_accuracy"}``.
    """
    _check_common(representation_function, batch_size, num_train, num_eval)
    rng = check_random_state(random_state)
    sampler = _Sampler(ground_truth, rng)
    width = None

    def points(num: int):
        nonlocal width
        feats, labels = [], []
        per_chunk = max(1, ENCODE_CHUNK // (2 * batch_size))
        for start in range(0, num, per_chunk):
            ks = rng.integers(sampler.num_factors, size=min(per_chunk, num - start))
            first = np.empty((len(ks), batch_size, sampler.num_factors))
            second = np.empty_like(first)
            for k in np.unique(ks):
                where = np.flatnonzero(ks == k)
                a = sampler.draw(int(k), where.size * batch_size)
                first[where] = a.reshape(where.size, batch_size, -1)
                second[where] = sampler.draw(int(k), a.shape[0], a[:, k]).reshape(where.size, batch_size, -1)
            rows = np.concatenate([first.reshape(-1, sampler.num_factors), second.reshape(-1, sampler.num_factors)])
            z = _encode(ground_truth, representation_function, rows, rng, width)
            width = z.shape[1]
            z1, z2 = np.split(z, 2)
            feats.append(np.abs(z1 - z2).reshape(len(ks), batch_size, -1).mean(axis=1))
            labels.append(ks)
        return np.concatenate(feats), np.concatenate(labels)

    x_train, y_train = points(num_train)
    x_eval, y_eval = points(num_eval)
    if np.unique(y_train).size < 2:
        only = y_train[0]
        return {"train_accuracy": 1.0, "eval_accuracy": float(np.mean(y_eval == only))}
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=1000, random_state=int(rng.integers(2**31 - 1)))
    model.fit(x_train, y_train)
    return {
        "train_accuracy": float(model.score(x_train, y_train)),
        "eval_accuracy": float(model.score(x_eval, y_eval)),
    }
