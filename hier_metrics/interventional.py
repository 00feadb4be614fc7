"""Scores that intervene on the generative process: the FactorVAE score (Kim & Mnih
2018) and the beta-VAE score (Higgins et al. 2017), with disentanglement_lib's
defaults.

Both need batches of observations that share the value of one factor. On a
hierarchical dataset a factor only has a value where it is active, so a batch that
fixes factor k is drawn from the *population* of k, the rows where k is active (its
ancestors' categorical choices hold), and everything that depends on k is drawn given
its fixed value: ``ground_truth.sample_factors(n, rng, fixed={k: values})``. On flat
data the population is the whole distribution and both scores reduce to
disentanglement_lib's.

``ground_truth`` is what ``hier_datasets.ground_truth(name)`` returns, or any object
with ``sample_factors(n, rng)`` and ``observations_from_factors(factors, rng)`` and
optionally a ``hierarchy``. Without a ``fixed`` argument to ``sample_factors`` the
factors must be independent (disentanglement_lib's assumption): rows are drawn and the
fixed column is overwritten.
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from hier_metrics._validation import check_positive_int, check_random_state, check_representation

__all__ = ["FactorSampler", "beta_vae_score", "factor_vae_score"]

#: observations passed to the representation function per call
ENCODE_CHUNK = 8192


class FactorSampler:
    """Draws factor rows from the population of a factor, optionally with its value fixed."""

    def __init__(self, ground_truth, rng: np.random.Generator):
        for attr in ("sample_factors", "observations_from_factors"):
            if not callable(getattr(ground_truth, attr, None)):
                raise ValueError(
                    f"ground_truth must provide sample_factors(n, rng) and observations_from_factors(factors, rng); "
                    f"{type(ground_truth).__name__} has no {attr}"
                )
        self.gt, self.rng = ground_truth, rng
        try:
            self.intervenes = "fixed" in inspect.signature(ground_truth.sample_factors).parameters
        except (TypeError, ValueError):
            self.intervenes = False
        probe = np.asarray(ground_truth.sample_factors(2, rng), dtype=np.float64)
        if probe.ndim != 2:
            raise ValueError(f"ground_truth.sample_factors must return a 2-D array, got shape {probe.shape}")
        self.num_factors = probe.shape[1]
        h = getattr(ground_truth, "hierarchy", None)
        #: for each factor, the categorical choices (column -> option index + 1) of its population
        self.population = [{} for _ in range(self.num_factors)]
        if h is not None:
            if h.num_dims != self.num_factors:
                raise ValueError(f"ground_truth.hierarchy has {h.num_dims} dimensions but factors have {self.num_factors}")
            self.population = [{c: float(option + 1) for c, option in conds} for conds in h.conditions]
        if not self.intervenes and any(self.population):
            raise ValueError(
                f"ground_truth: {type(ground_truth).__name__}.sample_factors has no 'fixed' argument, which a "
                f"hierarchical process needs to draw factors given others (see hier_datasets.GroundTruth)"
            )

    def draw(self, k: int | None, m: int, values: np.ndarray | None = None) -> np.ndarray:
        """``m`` rows from the population of factor ``k`` (every row if ``k`` is None),
        with factor ``k`` equal to ``values`` if given."""
        fixed = {} if k is None else dict(self.population[k])
        if values is not None:
            fixed[k] = values
        if self.intervenes:
            return np.asarray(self.gt.sample_factors(m, self.rng, fixed=fixed or None), dtype=np.float64)
        rows = np.asarray(self.gt.sample_factors(m, self.rng), dtype=np.float64)
        if values is not None:
            rows[:, k] = values
        return rows


def _encode(ground_truth, representation_function, factors: np.ndarray, rng, width: int | None = None) -> np.ndarray:
    chunks = []
    for start in range(0, len(factors), ENCODE_CHUNK):
        obs = ground_truth.observations_from_factors(factors[start : start + ENCODE_CHUNK], rng)
        rep = np.asarray(representation_function(obs), dtype=np.float64)
        if rep.ndim == 1:  # as the array metrics refuse 1-D codes
            raise ValueError(
                f"representation_function must return a 2-D array (examples, codes), got shape {rep.shape}; "
                "return codes.reshape(-1, 1) for a single code"
            )
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


class _ValueShare:
    """Share of a population sample in which a code takes a given value."""

    def __init__(self, codes: np.ndarray):
        self.counts = []
        for column in codes.T:
            values, counts = np.unique(column, return_counts=True)
            repeated = counts > 1
            self.counts.append(dict(zip(values[repeated].tolist(), counts[repeated].tolist())))
        self.size = len(codes)

    def __call__(self, dims: np.ndarray, values: np.ndarray) -> np.ndarray:
        return np.array([self.counts[d].get(v, 1) for d, v in zip(dims.tolist(), values.tolist())]) / self.size


def _fixed_factor_batches(sampler: FactorSampler, ks: np.ndarray, batch_size: int) -> np.ndarray:
    """(len(ks) * batch_size, K) rows; batch b shares the value of factor ks[b]."""
    rows = np.empty((len(ks), batch_size, sampler.num_factors))
    for k in np.unique(ks):
        where = np.flatnonzero(ks == k)
        refs = sampler.draw(int(k), where.size)[:, k]
        rows[where] = sampler.draw(int(k), where.size * batch_size, np.repeat(refs, batch_size)).reshape(
            where.size, batch_size, -1
        )
    return rows.reshape(-1, sampler.num_factors)


def _check_common(metric: str, ground_truth, representation_function, batch_size, num_train, num_eval):
    check_representation(representation_function, ground_truth,
                         f"{metric}(ground_truth, representation_function, ...)")
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
    standardize: bool = False,
) -> dict:
    """FactorVAE score (Kim & Mnih 2018), disentanglement_lib's procedure made hierarchy-aware.

    1. Variance of each code over ``num_variance_estimate`` samples of each factor's
       *population* (the rows where it is active; the whole distribution for a factor
       at the root); codes with standard deviation below ``prune_threshold`` there
       are left out of that population's votes.
    2. Each vote: pick a factor k uniformly, draw a batch of ``batch_size`` samples of
       its population that share the value of k, and vote for the code with the
       smallest variance relative to its population variance:
       ``argmin_d Var_batch(z_d) / Var_pop(k)(z_d)`` over the codes kept for k.
    3. A majority-vote classifier maps each code to the factor it was voted for most
       on ``num_train`` votes; accuracy of that classifier on the training votes and on
       ``num_eval`` fresh votes.

    On flat data every population is the whole distribution and this is
    disentanglement_lib's score exactly. On hierarchical data disentanglement_lib's
    global variances make the score meaningless: fixing a factor fixes its branch,
    so the codes of every other branch are constant in the batch, and the vote goes
    to one of them even for the true factors used as the code. Judging each code
    within the population the batch comes from removes those codes (they are
    constant there). Fixing a categorical still leaves a tie: the categorical's
    code and the codes of the branches it switched off are all constant. Ties go to
    the code whose value in the batch is rarest in the population (a switched-off
    code sits at its inactive value, shared by every other branch; the
    categorical's code at one option), then to the first code. Ties do not arise
    with continuous codes, so flat data is unaffected. A vote for a factor whose
    population has no code left counts as wrong.

    Args:
      ground_truth: the generative process (``hier_datasets.ground_truth(name)``).
      representation_function: ``observations -> (m, D) codes``.
      random_state: seed or numpy Generator for every draw.
      batch_size, num_train, num_eval, num_variance_estimate, prune_threshold:
        disentanglement_lib's defaults (64, 10,000, 5,000, 10,000, 0.05).
      standardize: False (default, disentanglement_lib's rule): ``prune_threshold``
        is an absolute standard deviation, so codes on a small scale are pruned
        although they vary (a perfect code in Chopsticks' own units, whose slopes
        have standard deviation ~0.004, scores 0.35 on ``depth2_slope``); True: the
        threshold is relative to each code's standard deviation over all the
        population samples, which makes the score independent of the codes' scale
        (the votes already are). Standardise codes (``z / z.std(axis=0)``) or pass
        True unless they are on a unit scale.

    Returns:
      ``{"score", "train_accuracy", "eval_accuracy", "num_active_dims",
      "pruned_codes"}``; ``score`` is the eval accuracy, ``num_active_dims`` counts the
      codes kept in at least one population and ``pruned_codes`` lists the others
      (their indices), of which a ``UserWarning`` also tells. With no code kept both
      accuracies are 0.

    Raises:
      ValueError: a representation that returns anything but one
        finite row per observation, or a bad count or threshold.
      TypeError: a representation that is not callable, or ``random_state`` neither an
        integer nor a Generator.

    Example:
      Two points of each Chopsticks series as the code (a small run; the defaults
      take 15,000 votes):

      >>> import hier_datasets
      >>> gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
      >>> result = factor_vae_score(gt, lambda series: series[:, [0, 63]], num_train=200, num_eval=100,
      ...                           num_variance_estimate=500)
      >>> sorted(result), 0 <= result["score"] <= 1, result["num_active_dims"]
      (['eval_accuracy', 'num_active_dims', 'pruned_codes', 'score', 'train_accuracy'], True, 2)
    """
    _check_common("factor_vae_score", ground_truth, representation_function, batch_size, num_train, num_eval)
    check_positive_int(num_variance_estimate, "num_variance_estimate", minimum=2)
    if not isinstance(prune_threshold, (int, float)) or not np.isfinite(prune_threshold) or prune_threshold < 0:
        raise ValueError(f"prune_threshold must be a finite number >= 0, got {prune_threshold!r}")
    rng = check_random_state(random_state)
    sampler = FactorSampler(ground_truth, rng)
    # one sample per distinct population, in order of first use
    keys = [tuple(sorted(p.items())) for p in sampler.population]
    pop_codes, width = {}, None
    for k, key in enumerate(keys):
        if key not in pop_codes:
            population = sampler.draw(k if key else None, num_variance_estimate)
            z = _encode(ground_truth, representation_function, population, rng, width)
            width = z.shape[1]
            pop_codes[key] = z
    pop_var = {key: np.var(z, axis=0, ddof=1) for key, z in pop_codes.items()}
    unit = 1.0
    if standardize:
        unit = np.std(np.concatenate(list(pop_codes.values())), axis=0, ddof=1)
        unit = np.where(unit > 0, unit, 1.0)
    kept = {key: np.sqrt(v) / unit >= prune_threshold for key, v in pop_var.items()}
    active = np.logical_or.reduce(list(kept.values()))
    pruned = [int(d) for d in np.flatnonzero(~active)]
    if pruned:
        rule = "relative to its standard deviation" if standardize else "disentanglement_lib's absolute rule"
        warnings.warn(
            f"factor_vae_score left out codes {pruned}: their standard deviation is below prune_threshold="
            f"{prune_threshold:g} in every population ({rule}); codes on a small scale are pruned although they "
            + ("vary" if standardize else "vary: standardise them or pass standardize=True"),
            UserWarning, stacklevel=2,
        )
    if not active.any():
        return {"score": 0.0, "train_accuracy": 0.0, "eval_accuracy": 0.0, "num_active_dims": 0, "pruned_codes": pruned}
    scale = np.stack([np.where(kept[key], pop_var[key], 1.0) for key in keys])
    usable = np.stack([kept[key] for key in keys])
    share = {key: _ValueShare(z) for key, z in pop_codes.items()}

    def votes(num: int) -> np.ndarray:
        """(num_factors, num_codes + 1) vote counts; the last column holds lost votes."""
        table = np.zeros((sampler.num_factors, width + 1), dtype=np.int64)
        per_chunk = max(1, ENCODE_CHUNK // batch_size)
        for start in range(0, num, per_chunk):
            ks = rng.integers(sampler.num_factors, size=min(per_chunk, num - start))
            rows = _fixed_factor_batches(sampler, ks, batch_size)
            z = _encode(ground_truth, representation_function, rows, rng, width)
            batches = z.reshape(len(ks), batch_size, -1)
            # a code constant in the batch has variance exactly 0 (np.var can leave ~1e-33)
            constant = np.ptp(batches, axis=1) == 0
            local = np.where(constant, 0.0, np.var(batches, axis=1, ddof=1))
            # +inf where a code is left out of the factor's population
            ratio = np.where(usable[ks], local / scale[ks], np.inf)
            best = np.where(usable[ks].any(axis=1), np.argmin(ratio, axis=1), width)
            for b in np.flatnonzero(np.sum(constant & usable[ks], axis=1) > 1):
                tied = np.flatnonzero(constant[b] & usable[ks[b]])
                best[b] = tied[np.argmin(share[keys[ks[b]]](tied, batches[b, 0, tied]))]
            np.add.at(table, (ks, best), 1)
        return table

    train_votes, eval_votes = votes(num_train), votes(num_eval)
    columns = np.flatnonzero(active)
    classifier = np.argmax(train_votes[:, columns], axis=0)
    train = train_votes[classifier, columns].sum() / num_train
    evaluation = eval_votes[classifier, columns].sum() / num_eval
    return {
        "score": float(evaluation),
        "train_accuracy": float(train),
        "eval_accuracy": float(evaluation),
        "num_active_dims": int(active.sum()),
        "pruned_codes": pruned,
    }


def beta_vae_score(
    ground_truth,
    representation_function,
    *,
    random_state=0,
    batch_size: int = 64,
    num_train: int = 10000,
    num_eval: int = 5000,
    standardize: bool = False,
) -> dict:
    """beta-VAE score (Higgins et al. 2017), disentanglement_lib's procedure.

    Each point: pick a factor k uniformly, draw ``batch_size`` pairs of samples where
    both members share the value of k, and take the mean absolute difference of their
    codes, ``mean_b |z(x1_b) - z(x2_b)|``, as features labelled k. A logistic
    regression is fitted on ``num_train`` points and scored on them and on
    ``num_eval`` fresh points.

    On hierarchical data the pairs come from the population of k (the rows where
    it is active) and share its value, with everything below k drawn given it
    (``sample_factors(..., fixed=...)``); codes of other branches then differ by 0,
    a pattern that tells the factors apart as well, so no further change is needed.

    Args:
      ground_truth: the generative process (``hier_datasets.ground_truth(name)``).
      representation_function: ``observations -> (m, D) codes``.
      random_state: an integer seed or a numpy Generator for every draw.
      batch_size, num_train, num_eval: disentanglement_lib's defaults (64, 10,000, 5,000).
      standardize: False (default, disentanglement_lib's procedure): the features
        keep the codes' scale, and the logistic regression's L2 penalty (C = 1)
        depresses the score of codes on a small scale (a perfect code in Chopsticks'
        own units scores 0.69 on ``depth2_slope``, 1.0 standardised); True: each
        feature is divided by its standard deviation over the training points, which
        makes the score independent of the codes' scale.

    Returns:
      ``{"score", "train_accuracy", "eval_accuracy"}``; ``score`` is the eval accuracy.

    Raises:
      ValueError: a representation that returns anything but one
        finite row per observation, or a bad count.
      TypeError: a representation that is not callable, or ``random_state`` neither an
        integer nor a Generator.

    Example:
      >>> import hier_datasets
      >>> gt = hier_datasets.ground_truth("chopsticks/depth2_inter")
      >>> result = beta_vae_score(gt, lambda series: series[:, [0, 63]], batch_size=16, num_train=40, num_eval=20)
      >>> sorted(result), 0 <= result["score"] <= 1
      (['eval_accuracy', 'score', 'train_accuracy'], True)
    """
    _check_common("beta_vae_score", ground_truth, representation_function, batch_size, num_train, num_eval)
    rng = check_random_state(random_state)
    sampler = FactorSampler(ground_truth, rng)
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
    if standardize:
        unit = x_train.std(axis=0)
        unit = np.where(unit > 0, unit, 1.0)
        x_train, x_eval = x_train / unit, x_eval / unit
    if np.unique(y_train).size < 2:
        only = y_train[0]
        evaluation = float(np.mean(y_eval == only))
        return {"score": evaluation, "train_accuracy": 1.0, "eval_accuracy": evaluation}
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=1000, random_state=int(rng.integers(2**31 - 1)))
    model.fit(x_train, y_train)
    evaluation = float(model.score(x_eval, y_eval))
    return {"score": evaluation, "train_accuracy": float(model.score(x_train, y_train)), "eval_accuracy": evaluation}
