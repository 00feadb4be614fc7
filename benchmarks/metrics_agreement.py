"""Agreement: every hier_metrics metric beside the authors' implementation.

Each metric is computed on a fixed table of cases, ours here and the authors' code
outside this repository (their code is not part of it; its numbers are stored in
``docs/results/metrics_agreement.json`` under ``reference``):

- R^4, R^4_c, H-error, purity, coverage: Ross & Doshi-Velez's code
  (github.com/dtak/hierarchical-disentanglement, ``src/metrics.py``);
- DCI, MIG, SAP, FactorVAE score, beta-VAE score: disentanglement_lib
  (github.com/google-research/disentanglement_lib, ``evaluation/metrics``);
- LSBD: Perez Rey et al.'s code (github.com/luis-armando-perez-rey/lsbd-vae,
  ``lsbd_vae/metrics/dlsbd_metric.py``).

Every case is a numpy process drawn from a fixed seed: ``sample_factors(n, rng)`` and
``observations_from_factors(factors, rng)``, the representation being the identity
on the observations (so the observations *are* the codes). The array metrics score
``N_ROWS`` rows of it; the interventional scores (FactorVAE, beta-VAE) call the same
process on both sides, disentanglement_lib through a thin adapter to its
ground-truth-data interface. ``--inputs DIR`` saves every case's arrays (and the
train/test rows our DCI and SAP use) as ``DIR/<family>__<case>.npz`` so that the
authors' functions can be fed identical arrays.

    python -m benchmarks.metrics_agreement                  # ours, then the table
    python -m benchmarks.metrics_agreement --inputs DIR     # also save the inputs
    python -m benchmarks.metrics_agreement --markdown-only  # re-render from the JSON
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

import hier_datasets  # noqa: E402
import hier_metrics as hm  # noqa: E402
from benchmarks.study import RESULTS  # noqa: E402
from hier_datasets import Categorical, Group, Hierarchy  # noqa: E402
from hier_metrics import MAX_AUTO_CATEGORIES, random_splits  # noqa: E402

JSON_PATH = RESULTS / "metrics_agreement.json"

N_ROWS = 2000  #: rows of every array case
METRIC_SEED = 0  #: random_state of every metric call (ours), and the authors' seeds
DCI_TEST_SIZE = 1 / 3  #: our dci / sap default split
VOTES = dict(batch_size=64, num_train=10000, num_eval=5000)  #: disentanglement_lib's defaults
NUM_VARIANCE_ESTIMATE = 10000
GRID = 32  #: angles per axis of the LSBD grids
HIER_NAME = "chopsticks/depth2_either"
NOISE_LEVELS = (0.05, 0.2, 0.5)
DISCRETE_LEVELS = (2, 5, 10, 15, 40)  #: values of each factor of the discrete case
#: array cases whose DCI trees choose between splits that fit equally well (identical codes,
#: or codes that are 0 on the same rows): their spread over tree seeds is measured
TIE_CASES = ("duplicated code", "hierarchical")
TREE_SEEDS = 20  #: tree seeds of that spread


# ------------------------------------------------------------------ processes
class FlatProcess:
    """Independent factors, observations = ``encode(factors, rng)``.

    ``levels[j]`` is the number of values of a discrete factor j (integers 0..m-1,
    uniform) or 0 for a continuous U(0, 1) factor; ``constant`` lists columns held at
    0.5. ``encode`` may draw noise from the rng it is given.
    """

    def __init__(self, levels, encode: Callable, constant=()):
        self.levels = tuple(int(m) for m in levels)
        self.constant = tuple(constant)
        self.encode = encode
        self.num_factors = len(self.levels)

    def sample_factors(self, n: int, rng: np.random.Generator) -> np.ndarray:
        out = rng.uniform(0.0, 1.0, size=(n, self.num_factors))
        for j, m in enumerate(self.levels):
            if m:
                out[:, j] = rng.integers(0, m, size=n)
        out[:, list(self.constant)] = 0.5
        return out

    def observations_from_factors(self, factors, rng: np.random.Generator) -> np.ndarray:
        return self.encode(np.asarray(factors, dtype=np.float64), rng)


def merge_up(hierarchy: Hierarchy, name: str = "top") -> Hierarchy:
    """The root categorical's options each give up their first continuous dimension to
    one new root dimension ``name`` (a "merge up": mutually exclusive variables share it)."""
    cat = hierarchy.root.categorical
    options = tuple((label, Group(g.continuous[1:], g.categorical)) for label, g in cat.options)
    return Hierarchy(Group((name,) + hierarchy.root.continuous, Categorical(cat.name, options)))


def push_down(hierarchy: Hierarchy) -> Hierarchy:
    """The root's continuous dimensions copied into every option of the root categorical
    (a "push down"); copies are renamed ``<name>@<option>``."""
    root = hierarchy.root
    options = tuple(
        (label, Group(tuple(f"{d}@{label}" for d in root.continuous) + g.continuous, g.categorical))
        for label, g in root.categorical.options
    )
    return Hierarchy(Group((), Categorical(root.categorical.name, options)))


def reverse_options(hierarchy: Hierarchy) -> Hierarchy:
    """The same hierarchy with the options of every categorical listed in reverse order."""

    def rev(group: Group) -> Group:
        cat = group.categorical
        if cat is None:
            return group
        return Group(group.continuous, Categorical(cat.name, tuple((lab, rev(g)) for lab, g in cat.options[::-1])))

    return Hierarchy(rev(hierarchy.root))


class HierarchicalProcess:
    """Chopsticks depth-2 ``either`` factors; codes are the factors, rescaled, with noise.

    Factors come from ``hier_datasets.ground_truth`` (a categorical holds option
    index + 1 where active, 0 where inactive). The codes, column by column: a
    continuous factor divided by its range (``high``) plus ``noise`` * N(0, 1) where it
    is non-zero, 0 elsewhere; a categorical copied. With ``merged``, the first offset
    of each branch (``intercept0@i``, ``slope0@s``) shares one code ``top`` (a merge up),
    and ``code_hierarchy`` says so. The codes are a function of each row alone, so rows
    the hierarchy does not allow (as disentanglement_lib's interventions make) still
    have codes.
    """

    def __init__(self, merged: bool = False, noise: float = 0.05):
        self.gt = hier_datasets.ground_truth(HIER_NAME)
        self.hierarchy = self.gt.hierarchy
        self.num_factors = self.hierarchy.num_dims
        self.noise = noise
        self.merged = merged
        self.code_hierarchy = merge_up(self.hierarchy) if merged else self.hierarchy
        self.scale = np.where(self.hierarchy.is_categorical, 1.0, np.asarray(self.gt.high, dtype=np.float64))

    def sample_factors(self, n: int, rng: np.random.Generator, fixed=None) -> np.ndarray:
        """Factors of the dataset's process; ``fixed`` as for ``GroundTruth.sample_factors``."""
        return np.asarray(self.gt.sample_factors(n, rng, fixed=fixed), dtype=np.float64)

    def observations_from_factors(self, factors, rng: np.random.Generator) -> np.ndarray:
        f = np.asarray(factors, dtype=np.float64)
        cat = self.hierarchy.is_categorical
        noise = self.noise * rng.normal(size=f.shape)
        codes = np.where(cat, f, f / self.scale + np.where(f != 0, noise, 0.0))
        if not self.merged:
            return codes
        names = self.hierarchy.names
        firsts = [names.index(g.continuous[0]) for _, g in self.hierarchy.root.categorical.options]
        columns = {name: codes[:, i] for i, name in enumerate(names)}
        top = (f[:, firsts] / self.scale[firsts]).sum(axis=1) + noise[:, firsts[0]]
        columns["top"] = top
        return np.column_stack([columns[name] for name in self.code_hierarchy.names])


def orthogonal(a: np.ndarray) -> np.ndarray:
    """The orthonormal columns of Gram-Schmidt on ``a``'s columns (a random rotation or
    reflection when ``a`` is standard normal), in scalar and elementwise arithmetic:
    ``np.linalg.qr``'s last bits depend on the CPU's BLAS kernels, and the authors'
    numbers are tied to the exact inputs (their digests)."""
    k = a.shape[1]
    q = np.zeros_like(a)
    for j in range(k):
        v = a[:, j].copy()
        for i in range(j):
            v -= sum(float(x) * float(y) for x, y in zip(q[:, i], v)) * q[:, i]
        q[:, j] = v / np.sqrt(sum(float(x) ** 2 for x in v))
    return q


def times(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``x @ m`` term by term in a fixed order, so its bits do not depend on BLAS."""
    out = np.zeros(x.shape[:-1] + (m.shape[1],))
    for i in range(m.shape[0]):
        out += x[..., i, None] * m[i]
    return out


def _flat_processes() -> dict[str, FlatProcess]:
    k = 5
    uniform = (0,) * k
    rotation = orthogonal(np.random.default_rng(11).normal(size=(k, k)))
    perm = np.array([2, 0, 4, 1, 3])
    scale = np.array([2.0, -0.5, 3.0, 0.25, 10.0])
    discrete_levels = np.array(DISCRETE_LEVELS)

    def noisy(sigma):
        return lambda f, rng: f + sigma * rng.normal(size=f.shape)

    cases = {
        "identity": FlatProcess(uniform, lambda f, rng: f.copy()),
        "permuted and scaled": FlatProcess(uniform, lambda f, rng: f[:, perm] * scale),
    }
    for sigma in NOISE_LEVELS:
        cases[f"noise {sigma:g}"] = FlatProcess(uniform, noisy(sigma))
    cases["rotation"] = FlatProcess(uniform, lambda f, rng: times(f - 0.5, rotation))
    cases["random codes"] = FlatProcess(uniform, lambda f, rng: rng.normal(size=f.shape))
    cases["discrete factors"] = FlatProcess(
        discrete_levels, lambda f, rng: f / (discrete_levels - 1) + 0.05 * rng.normal(size=f.shape)
    )
    cases["constant columns"] = FlatProcess(
        (0,) * k, lambda f, rng: np.column_stack([f[:, :4], np.ones(len(f))]), constant=(4,)
    )
    cases["duplicated code"] = FlatProcess((0,) * 4, lambda f, rng: f[:, [0, 0, 1, 2, 3]].copy())
    return cases


def processes() -> dict:
    """Every array / interventional case, by name, in table order."""
    cases: dict = dict(_flat_processes())
    cases["hierarchical"] = HierarchicalProcess()
    cases["hierarchical, merged up"] = HierarchicalProcess(merged=True)
    return cases


CASE_NOTES = {
    "identity": "5 factors U(0, 1); codes = factors",
    "permuted and scaled": "codes = factors permuted, times (2, -0.5, 3, 0.25, 10)",
    "noise 0.05": "codes = factors + 0.05 N(0, 1) (factor sd 0.29)",
    "noise 0.2": "codes = factors + 0.2 N(0, 1)",
    "noise 0.5": "codes = factors + 0.5 N(0, 1)",
    "rotation": "codes = (factors - 0.5) times a random 5 x 5 rotation",
    "random codes": "codes N(0, 1), independent of the factors",
    "discrete factors": f"factors uniform on {', '.join(map(str, DISCRETE_LEVELS))} integer values 0..m-1; "
    "codes = f / (m - 1) + 0.05 N",
    "constant columns": "factor 4 constant (0.5), code 4 constant (1.0); codes 0-3 = factors 0-3",
    "duplicated code": "4 factors; codes = (f0, f0, f1, f2, f3)",
    "hierarchical": "Chopsticks depth-2 either (9 factors, 6 paths); codes = factors / range + 0.05 N where active",
    "hierarchical, merged up": "as hierarchical; intercept0@i and slope0@s share one code (a merge up)",
}


def case_arrays(name: str, process, index: int) -> dict:
    """The arrays of one case, from its own seed (100 + its position in the table)."""
    rng = np.random.default_rng(100 + index)
    factors = np.asarray(process.sample_factors(N_ROWS, rng), dtype=np.float64)
    codes = np.asarray(process.observations_from_factors(factors, rng), dtype=np.float64)
    if isinstance(process, HierarchicalProcess):
        active = process.hierarchy.activity_mask(factors)
        code_h = process.code_hierarchy
        factor_cat = np.asarray(process.hierarchy.is_categorical)
    else:
        active = np.ones(factors.shape, dtype=bool)
        code_h = Hierarchy.flat(codes.shape[1])
        factor_cat = np.array([m > 0 for m in process.levels])
    train, test = next(random_splits(N_ROWS, 1, DCI_TEST_SIZE, np.random.default_rng(METRIC_SEED)))
    return dict(
        factors=factors, codes=codes, factor_active=active, factor_categorical=factor_cat,
        code_hierarchy=code_h, train=train, test=test,
    )


# ---------------------------------------------------------------------- LSBD
def _torus_embedding(n: int) -> np.ndarray:
    """(n, n, 4): (cos t1, sin t1, cos 2 t2, sin 2 t2) on an n x n grid of angles."""
    t1, t2 = np.meshgrid(*(2 * np.pi * np.arange(n) / n,) * 2, indexing="ij")
    return np.stack([np.cos(t1), np.sin(t1), np.cos(2 * t2), np.sin(2 * t2)], axis=-1)


def lsbd_cases() -> dict[str, dict]:
    """Grids of codes over SO(2) x SO(2), and two cylinders (3 objects x SO(2))."""
    rng = np.random.default_rng(200)
    e = _torus_embedding(GRID)
    q = orthogonal(rng.normal(size=(4, 4)))
    cases = {
        "identity": e,
        "permuted and scaled": e[..., [2, 0, 3, 1]] * np.array([2.0, -0.5, 3.0, 0.25]),
    }
    for sigma in NOISE_LEVELS:
        cases[f"noise {sigma:g}"] = e + sigma * rng.normal(size=e.shape)
    cases["rotation"] = times(e, q)
    cases["random codes"] = rng.normal(size=e.shape)
    cases["constant columns"] = np.concatenate([e, np.ones(e.shape[:-1] + (1,)), np.zeros(e.shape[:-1] + (1,))], -1)
    cases["duplicated code"] = np.concatenate([e, e[..., :2]], axis=-1)
    theta = 2 * np.pi * np.arange(GRID) / GRID
    circle = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
    mirrored = circle * np.array([1.0, -1.0])  # the same circle traversed the other way
    linear, offsets = rng.normal(size=(2, 4)), rng.normal(size=(3, 4))
    noise = 0.05 * rng.normal(size=(3, GRID, 4))
    out = {name: {"grid": grid, "num_object_axes": 0} for name, grid in cases.items()}
    for name, circles in (("cylinder, one map", [circle] * 3), ("cylinder, one object mirrored", [circle, mirrored, circle])):
        grid = np.stack([c @ linear for c in circles]) + offsets[:, None, :] + noise
        out[name] = {"grid": grid, "num_object_axes": 1}
    return out


LSBD_NOTES = {
    "identity": f"{GRID} x {GRID} torus grid; codes (cos t1, sin t1, cos 2 t2, sin 2 t2)",
    "permuted and scaled": "columns permuted, times (2, -0.5, 3, 0.25)",
    "rotation": "codes times a random 4 x 4 rotation",
    "random codes": "codes N(0, 1)",
    "constant columns": "two constant columns appended",
    "duplicated code": "the first circle's two columns appended again",
    "cylinder, one map": "3 objects x 32 angles: one random linear map of (cos t, sin t), an offset "
    "per object, + 0.05 N",
    "cylinder, one object mirrored": "as cylinder, one map, with object 2's circle traversed the other way",
}


# ------------------------------------------------------------ path metrics
def h_error_cases() -> dict[str, tuple[Hierarchy, Hierarchy]]:
    d2 = hier_datasets.ground_truth(HIER_NAME).hierarchy
    spaceshapes = hier_datasets.ground_truth("spaceshapes").hierarchy

    def g(*dims, cat=None):
        return Group(tuple(dims), cat)

    # moved subtree: the (p: y | q: -) categorical hangs under option a, then under option b
    # (with one dimension on each branch, then with two on b)
    sub = Categorical("c", (("p", g("y")), ("q", g())))
    before = Hierarchy(g(cat=Categorical("r", (("a", g("x", cat=sub)), ("b", g("z"))))))
    after = Hierarchy(g(cat=Categorical("r", (("a", g("x")), ("b", g("z", cat=sub))))))
    return {
        "identity": (d2, d2),
        "permuted options": (d2, reverse_options(d2)),
        "merged up": (d2, merge_up(d2)),
        "pushed down (Spaceshapes x, y)": (spaceshapes, push_down(spaceshapes)),
        "moved subtree, equivalent branches": (before, after),
        "moved subtree": (
            Hierarchy(g(cat=Categorical("r", (("a", g("x", cat=sub)), ("b", g("z", "w")))))),
            Hierarchy(g(cat=Categorical("r", (("a", g("x")), ("b", g("z", "w", cat=sub)))))),
        ),
        "depth 2 vs depth 3": (d2, hier_datasets.ground_truth("chopsticks/depth3_either").hierarchy),
        "either vs both": (d2, hier_datasets.ground_truth("chopsticks/depth2_both").hierarchy),
        "flat vs hierarchical": (Hierarchy(g("u", "v")), d2),
    }


H_ERROR_NOTES = {
    "moved subtree, equivalent branches": "(r: a -> x, (c: p -> y | q -> -) | b -> z) vs the c subtree under b",
    "moved subtree": "(r: a -> x, (c: p -> y | q -> -) | b -> z, w) vs the c subtree under b",
}


def path_cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(true paths, predicted paths; -1 = discarded) on Chopsticks depth-2 either."""
    rng = np.random.default_rng(300)
    process = HierarchicalProcess()
    factors = process.sample_factors(N_ROWS, rng)
    active = process.hierarchy.activity_mask(factors)
    path_active = np.asarray(process.hierarchy.path_active)
    true = np.argmax(np.all(active[:, None, :] == path_active[None], axis=2), axis=1)
    paths = path_active.shape[0]
    cases = {"identity": true.copy(), "permuted": rng.permutation(paths)[true]}
    for q in NOISE_LEVELS:
        pred = np.where(rng.random(N_ROWS) < q, rng.integers(0, paths, N_ROWS), true)
        cases[f"noise {q:g}"] = np.where(rng.random(N_ROWS) < q / 5, -1, pred)
    cases["random"] = rng.integers(0, paths, N_ROWS)
    cases["constant"] = np.zeros(N_ROWS, dtype=np.int64)
    cases["hierarchical: sibling paths merged"] = np.where(true == 2, 1, true)
    cases["hierarchical: a path split"] = np.where((true == 0) & (rng.random(N_ROWS) < 0.5), paths, true)
    cases["all discarded"] = np.full(N_ROWS, -1)
    return {name: (true, pred) for name, pred in cases.items()}


PATH_NOTES = {
    "permuted": "predicted labels = a permutation of the true paths",
    "noise 0.05": "5% relabelled at random, 1% discarded",
    "noise 0.2": "20% relabelled at random, 4% discarded",
    "noise 0.5": "50% relabelled at random, 10% discarded",
    "hierarchical: sibling paths merged": "two sibling paths share one label",
    "hierarchical: a path split": "half of one path gets a new label",
}


# -------------------------------------------------------------- our side
def _guard(fn) -> dict:
    try:
        return fn()
    except Exception as err:  # recorded in the table: a failing case is a result too
        return {"value": None, "error": f"{type(err).__name__}: {err}"}


def _identity(x):
    return np.asarray(x)


def _per_factor(values) -> list:
    """Per-factor scores for JSON: NaN (a factor left out of the mean) as None."""
    return [None if np.isnan(v) else float(v) for v in np.asarray(values, dtype=np.float64)]


def dci_tree_seed_range(a: dict) -> dict:
    """Our DCI disentanglement and completeness, each as [min, max] over ``TREE_SEEDS``
    seeds of the gradient-boosted trees alone (the train / test rows stay METRIC_SEED's)."""
    from hier_metrics.dci import BACKENDS

    def trees(seed):
        return lambda categorical, _: BACKENDS["sklearn"](categorical, seed)  # the default trees, this seed

    runs = [hm.dci(a["factors"], a["codes"], random_state=METRIC_SEED, estimator=trees(s)) for s in range(TREE_SEEDS)]
    return {key: [min(r[key] for r in runs), max(r[key] for r in runs)] for key in ("disentanglement", "completeness")}


def ours_array_metrics(a: dict, process) -> dict:
    """Our array and interventional metrics on one case; ``value`` is each headline number."""
    f, z = a["factors"], a["codes"]
    common = dict(random_state=METRIC_SEED, **VOTES)

    def r4():
        r = hm.r4(f, z, random_state=METRIC_SEED)
        return {"value": r["score"], "per_factor": _per_factor(r["per_factor"])}

    def r4c():
        r = hm.r4c(f, z, factor_active=a["factor_active"], code_hierarchy=a["code_hierarchy"],
                   random_state=METRIC_SEED)
        return {"value": r["score"], "per_factor": _per_factor(r["per_factor"])}

    def factor_vae():
        r = hm.factor_vae_score(process, _identity, num_variance_estimate=NUM_VARIANCE_ESTIMATE, **common)
        return {"value": r["eval_accuracy"], "train_accuracy": r["train_accuracy"],
                "num_active_dims": r["num_active_dims"]}

    def beta_vae():
        r = hm.beta_vae_score(process, _identity, **common)
        return {"value": r["eval_accuracy"], "train_accuracy": r["train_accuracy"]}

    out = {"r4": _guard(r4), "r4c": _guard(r4c)}
    d = _guard(lambda: hm.dci(f, z, random_state=METRIC_SEED))
    for key in ("disentanglement", "completeness"):
        out[f"dci_{key}"] = d if "error" in d else {"value": d[key]}
    out["mig"] = _guard(lambda: {"value": hm.mig(f, z)["mig"]})
    out["sap"] = _guard(lambda: {"value": hm.sap(f, z, random_state=METRIC_SEED)["sap"]})
    out["factor_vae"] = _guard(factor_vae)
    out["beta_vae"] = _guard(beta_vae)
    return out


def digest(payload: dict) -> str:
    """Short SHA-256 of a case's inputs (sorted names, then each value's bytes as a numpy
    array), stored on both sides so that the table can tell stale reference numbers."""
    h = hashlib.sha256()
    for key in sorted(payload):
        value = np.ascontiguousarray(np.asarray(payload[key]))
        h.update(key.encode() + str(value.dtype).encode() + str(value.shape).encode() + value.tobytes())
    return h.hexdigest()[:16]


def compute_ours(inputs: Path | None) -> tuple[dict, dict]:
    """Our results by metric and case, and the digest of every case's inputs by file stem."""
    results: dict[str, dict] = {}
    digests: dict[str, str] = {}

    def put(metric, case, value):
        results.setdefault(metric, {})[case] = value

    def save(stem: str, payload: dict) -> None:
        digests[stem] = digest(payload)
        if inputs is not None:
            np.savez(inputs / f"{stem}.npz", **payload)

    for index, (name, process) in enumerate(processes().items()):
        start = time.perf_counter()
        a = case_arrays(name, process, index)
        for metric, value in ours_array_metrics(a, process).items():
            put(metric, name, value)
        if name in TIE_CASES:
            for key, spread in dci_tree_seed_range(a).items():
                results[f"dci_{key}"][name]["tree_seed_range"] = spread
        save(f"array__{_file_name(name)}", dict(
            case=name, factors=a["factors"], codes=a["codes"], factor_active=a["factor_active"],
            factor_categorical=a["factor_categorical"],
            code_hierarchy_reference=json.dumps(a["code_hierarchy"].to_reference()),
            code_categorical=np.asarray(a["code_hierarchy"].is_categorical), train=a["train"], test=a["test"],
        ))
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
    for name, case in lsbd_cases().items():
        def lsbd(case=case):
            r = hm.lsbd(case["grid"], num_object_axes=case["num_object_axes"])
            return {"value": r["score"], "omegas": r["omegas"].tolist()}

        put("lsbd", name, _guard(lsbd))
        save(f"lsbd__{_file_name(name)}", dict(case=name, **case))
    for name, (ha, hb) in h_error_cases().items():
        put("h_error", name, _guard(lambda: {"value": hm.h_error(ha, hb)}))
        put("h_error_tree_edit", name, _guard(lambda: {"value": hm.h_error(ha, hb, method="tree_edit")}))
        save(f"h_error__{_file_name(name)}", dict(
            case=name, a=json.dumps(ha.to_reference()), b=json.dumps(hb.to_reference())
        ))
    for name, (true, pred) in path_cases().items():
        put("purity", name, _guard(lambda: {"value": hm.purity(true, pred)}))
        put("coverage", name, _guard(lambda: {"value": hm.coverage(pred)}))
        save(f"paths__{_file_name(name)}", dict(case=name, true=true, pred=pred))
    return results, digests


def _file_name(case: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in case)


# ----------------------------------------------------------------- table
#: (key, title, tolerance, what "authors'" is[, key of the authors' numbers if not the same])
METRICS = [
    ("r4", "R^4 (paper eq. 3)", 0.03, "hierarchical-disentanglement `R4_scores` (mean over factors)"),
    ("r4c", "R^4_c (paper eqs. 4-5)", 0.03, "hierarchical-disentanglement `R4c_scores` (mean over factors)"),
    ("dci_disentanglement", "DCI disentanglement", 0.01, "disentanglement_lib `compute_importance_gbt` + `disentanglement`"),
    ("dci_completeness", "DCI completeness", 0.01, "disentanglement_lib `compute_importance_gbt` + `completeness`"),
    ("mig", "MIG", 1e-9, "disentanglement_lib `_compute_mig`"),
    ("sap", "SAP", 1e-6, "disentanglement_lib `compute_score_matrix` + `compute_avg_diff_top_two`"),
    ("factor_vae", "FactorVAE score (eval accuracy)", 0.02, "disentanglement_lib `compute_factor_vae`"),
    ("beta_vae", "beta-VAE score (eval accuracy)", 0.02, "disentanglement_lib `compute_beta_vae_sklearn`"),
    ("lsbd", "LSBD (lower is better)", 2e-3, "lsbd-vae `dlsbd` (joint search over 21^K omegas)"),
    ("h_error", "H-error (ours: method='paths', the default)", 0,
     "hierarchical-disentanglement `H_error` (tree edit distance)"),
    ("h_error_tree_edit", "H-error (ours: method='tree_edit')", 0,
     "hierarchical-disentanglement `H_error` (tree edit distance)", "h_error"),
    ("purity", "purity", 1e-12, "hierarchical-disentanglement `purity_coverage`"),
    ("coverage", "coverage", 1e-12, "hierarchical-disentanglement `purity_coverage`"),
]

def _levels(which) -> str:
    chosen = [str(m) for m in DISCRETE_LEVELS if which(m)]
    if not chosen:
        return "no"
    return (", ".join(f"{m}-" for m in chosen[:-1]) + " and " if len(chosen) > 1 else "") + f"{chosen[-1]}-valued"


_CLASSIFIED = _levels(lambda m: m <= MAX_AUTO_CATEGORIES)
_REGRESSED = _levels(lambda m: m > MAX_AUTO_CATEGORIES)
_AUTO = (
    "both classify targets with at most 10 distinct integer values (accuracy) and regress the others (R^2)"
    if MAX_AUTO_CATEGORIES == 10 else
    f"authors classify targets with at most 10 distinct integer values, ours (categorical='auto') at most "
    f"{MAX_AUTO_CATEGORIES}"
)
_LABELS = (
    f"disentanglement_lib treats every factor as a class label; ours (categorical='auto') classifies the "
    f"{_CLASSIFIED} factors and regresses the {_REGRESSED} ones"
)

#: why a row differs (or would), by (metric, case); "*" applies to every case of a metric
NOTES = {
    ("r4", "*"): "ours: binned estimator, seeded splits; authors: gradient-boosted trees, 5 unseeded splits",
    ("r4", "discrete factors"): _AUTO,
    ("r4", "constant columns"): "authors score a constant target as R^2 = 1, so their constant factor matches "
    "the constant code with R^4 = 1",
    ("r4c", "*"): "as R^4; flat cases use a flat code hierarchy",
    ("r4c", "discrete factors"): "authors detect activity as |v| > 1e-10, so the value 0 of a discrete "
    "factor counts as inactive (the binary factor then looks constant and scores 0); ours takes explicit "
    "activity masks (all active)",
    ("r4c", "constant columns"): "as R^4: a constant target scores 1 for the authors",
    ("r4c", "hierarchical"): "both read a categorical code as its option index + 1 (0 inactive); the "
    "authors' columns are reordered to their layout",
    ("r4c", "hierarchical, merged up"): "invariant to merging up on both sides",
    ("dci_disentanglement", "*"): "same train rows (2/3) for both; continuous factors use the "
    "regressor (disentanglement_lib's own code assumes class labels)",
    ("dci_disentanglement", "discrete factors"): _LABELS,
    ("dci_disentanglement", "hierarchical"): "ties between interchangeable splits (codes that are 0 on the "
    "same rows) are broken by each tree's random_state: ours draws one per factor from the metric's seed; "
    "there the classifier follows numpy's global random state and the regressor put in for continuous factors has "
    "random_state=0",
    ("dci_completeness", "discrete factors"): _LABELS,
    ("dci_completeness", "duplicated code"): "which of the two identical codes a split uses is decided by the "
    "trees' random_state (ours: one per factor from the metric's seed; there: random_state=0)",
    ("dci_completeness", "hierarchical"): "as for disentanglement: tie-breaking between interchangeable codes",
    ("mig", "*"): "continuous factors discretised with disentanglement_lib's own 20-bin histogram before its call",
    ("mig", "discrete factors"): f"disentanglement_lib keeps every factor as labels; ours bins the {_REGRESSED} "
    "factors into 20 equal-width bins, which merges values of any factor with more than 20",
    ("mig", "constant columns"): "disentanglement_lib divides by the zero entropy of the constant factor (NaN); "
    "ours leaves a constant factor out of the mean",
    ("sap", "*"): "continuous factors: squared correlation on all rows; class-label factors: "
    "LinearSVC(C=0.01) on the same 2/3 train, 1/3 test rows",
    ("sap", "constant columns"): "disentanglement_lib divides by the zero variance of the constant factor (NaN); "
    "ours leaves a constant factor out of the mean",
    ("sap", "discrete factors"): _LABELS + " (squared correlation)",
    ("factor_vae", "*"): "same process, different random streams: sampling differences up to ~0.02",
    ("factor_vae", "hierarchical"): "ours draws each batch from the fixed factor's population (the rows "
    "where it is active) and compares codes with their variance in that population; disentanglement_lib "
    "copies row 0's value of the factor into a batch drawn from every path, so rows the hierarchy does not "
    "allow appear (an inactive factor given a value, or 0 given to an active one). With codes that copy "
    "the factors column by column, the fixed factor's own code still wins on both sides",
    ("factor_vae", "hierarchical, merged up"): "as hierarchical; here the copied values reach the shared "
    "code on rows of the other branch, and the two procedures part",
    ("beta_vae", "*"): "same process, different random streams; authors' LogisticRegression stops at 100 "
    "iterations, ours at 1,000",
    ("beta_vae", "hierarchical"): "as for the FactorVAE score: pairs drawn from the factor's population "
    "vs a value copied into rows of every path",
    ("beta_vae", "hierarchical, merged up"): "as for the FactorVAE score",
    ("lsbd", "*"): "authors whiten the principal components with the n - 1 variance, so their dispersions "
    "are (n - 1) / n of ours",
    ("lsbd", "cylinder, one object mirrored"): "both share one omega across objects; PCA fixes each object's "
    "plane only up to a reflection, and ours lets each object take the better sign (omega or -omega), the "
    "authors' does not, so a mirrored object (or PCA's arbitrary sign) cannot fit there",
    ("h_error", "*"): "ours counts the paths of either hierarchy left without a partner of the same "
    "signature (minimum downstream dimensionality at each node along the path, the paper's text); the "
    "authors' code counts node edits (Zhang-Shasha tree edit distance, `edist`) between the trees with each "
    "node labelled by its minimum downstream dimensionality and children sorted. Both are 0 for equal "
    "structures and invariant to merging up and pushing down, but count differently otherwise",
    ("h_error", "moved subtree"): "ours: signatures (1,1,1), (1,1,2), (1,2) against (1,1), (1,2,2), (1,2,3); "
    "none pairs, so all 6 paths count; the edit distance is 3 node edits",
    ("h_error_tree_edit", "*"): "ours with method='tree_edit': the same canonical trees and unit-cost edit "
    "distance, computed in pure Python",
    ("purity", "all discarded"): "authors divide by zero (no component); ours returns 0",
}


def _fmt(x, integer: bool = False) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if math.isnan(x):
        return "NaN"
    return f"{int(x)}" if integer else f"{x:.4f}"


def _value(entry):
    if entry is None:
        return None
    if "error" in entry:
        return "error"
    v = entry.get("value")
    return float("nan") if v is None and entry.get("nan") else v


def _compare(metric: str, tol: float, ours: dict | None, ref: dict | None) -> tuple[str, str]:
    """(difference as text, verdict) of one row."""
    a, b = _value(ours), _value(ref)
    if b is None:
        return "-", "not computed"
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not (math.isnan(a) or math.isnan(b)):
        diff = a - b
        diff_s = f"{int(diff):+d}" if metric.startswith("h_error") else f"{diff:+.4f}"
        return diff_s, "agrees" if abs(diff) <= tol else "differs"
    return "-", "differs"


def _row(metric: str, tol: float, case: str, ours: dict | None, ref: dict | None) -> str:
    diff_s, verdict = _compare(metric, tol, ours, ref)
    notes = [verdict]
    specific = NOTES.get((metric, case))
    if specific:
        notes.append(specific)
    spread = (ours or {}).get("tree_seed_range")
    if spread and verdict == "differs":
        b = _value(ref)
        where = "inside" if spread[0] <= b <= spread[1] else "outside"
        notes.append(f"over {TREE_SEEDS} tree seeds on the same rows ours spans {spread[0]:.4f}-{spread[1]:.4f}, "
                     f"the authors' value {where} it")
    left_out = [i for i, v in enumerate((ours or {}).get("per_factor", [])) if v is None]
    if left_out:
        notes.append(f"ours leaves factor {', '.join(map(str, left_out))} out of the mean (NaN: constant)")
    dims = [(e or {}).get("num_active_dims") for e in (ours, ref)]
    if None not in dims and dims[0] != dims[1]:
        notes.append(f"num_active_dims: ours {dims[0]} (codes kept after pruning), authors {dims[1]} "
                     "(disentanglement_lib counts every code)")
    for entry, who in ((ours, "ours"), (ref, "authors")):
        if entry and "error" in entry:
            notes.append(f"{who}: {entry['error'][:120]}")
    integer = metric.startswith("h_error")
    a, b = _value(ours), _value(ref)
    return f"| {case} | {_fmt(a, integer)} | {_fmt(b, integer)} | {diff_s} | {_cell('; '.join(notes))}"


def _cell(text: str) -> str:
    """Text for the last cell of a table row (pipes escaped), with the closing bar."""
    return text.replace("|", "\\|") + " |"


def _summary(ours: dict, ref: dict) -> list[str]:
    lines = ["| metric | rows agreeing | rows differing (see each section) |", "|---|---:|---|"]
    for key, title, tol, *rest in METRICS:
        theirs = ref.get(rest[1] if len(rest) > 1 else key, {})
        verdicts = {case: _compare(key, tol, v, theirs.get(case))[1] for case, v in ours.get(key, {}).items()}
        agree = sum(v == "agrees" for v in verdicts.values())
        differ = [case for case, v in verdicts.items() if v == "differs"]
        missing = sum(v == "not computed" for v in verdicts.values())
        cell = ", ".join(differ) or "-"
        if missing:
            cell += f" ({missing} not computed)"
        lines.append(f"| {title} | {agree} of {len(verdicts)} | {cell} |")
    return lines


def write_markdown(report: dict) -> None:
    ours, ref = report["ours"], report.get("reference", {})
    s = report["settings"]
    lines = [
        "# Agreement with the authors' implementations",
        "",
        "`python -m benchmarks.metrics_agreement`: every `hier_metrics` metric (ours) beside the",
        "implementation of the authors it follows, on the same inputs. The authors' numbers come from",
        "their own code, run outside this repository on the arrays that `--inputs DIR` saves; they are",
        "stored in `metrics_agreement.json` under `reference` (sources and commits below).",
        "",
        f"Sizes: array cases {s['n_rows']} rows; DCI and SAP fit on 2/3 of them and test on 1/3, the same",
        "rows on both sides; FactorVAE and beta-VAE scores with disentanglement_lib's defaults (batch 64,",
        f"{s['votes']['num_train']} training and {s['votes']['num_eval']} evaluation votes / points, "
        f"{s['num_variance_estimate']} samples for the variances,",
        f"pruning at sd 0.05); LSBD on {s['grid']} x {s['grid']} grids (omega in -10..10); H-error on hierarchy pairs;",
        f"purity and coverage on {s['n_rows']} Chopsticks depth-2 either points. Every case draws from its own",
        "fixed seed. LSBD needs a full grid of angles, so it has no discrete or hierarchical case (two",
        "cylinders, objects x SO(2), stand in); H-error, purity and coverage have cases of their own.",
        "A row *agrees* when the difference is within the metric's tolerance (in each",
        "section's heading): exact for formulas fed identical inputs, wider where an estimator or",
        "random sampling differs by design.",
        "",
        "disentanglement_lib's further evaluations (modularity / explicitness, IRS, the unsupervised",
        "scores, fairness, the downstream tasks, UDR) and the `hier_metrics.dlib_compat` drop-in are",
        "compared end to end on [metrics_agreement_dlib.md](metrics_agreement_dlib.md).",
        "",
    ]
    stale = sorted(k for k, v in report.get("inputs", {}).items() if ref.get("_inputs", {}).get(k) != v)
    if ref and stale:
        lines += [
            f"**The authors' numbers were computed on other inputs for {len(stale)} of "
            f"{len(report['inputs'])} cases** ({', '.join(stale[:4])}{', ...' if len(stale) > 4 else ''}): "
            "regenerate them (see the end of this page).",
            "",
        ]
    src = ref.get("_sources", {})
    if src:
        lines += ["Authors' code used for the reference numbers:", ""]
        for name, info in src.items():
            lines.append(f"- {name}: commit `{info}`")
        lines.append("")
    lines += ["## Summary", ""] + _summary(ours, ref) + [""]
    lines += ["## Cases", "", "| case | construction |", "|---|---|"]
    lines += [f"| {c} | {d} |" for c, d in CASE_NOTES.items()]
    lines.append("")
    for key, title, tol, authors, *ref_key in METRICS:
        theirs = ref.get(ref_key[0] if ref_key else key, {})
        cases = list(ours.get(key, {}))
        lines += [f"## {title}", "", f"Authors': {authors}. Tolerance {tol:g}.", ""]
        general = NOTES.get((key, "*"))
        if general:
            lines += [f"Every row: {general}.", ""]
        extra = {"lsbd": LSBD_NOTES, "h_error": H_ERROR_NOTES, "h_error_tree_edit": H_ERROR_NOTES,
                 "purity": PATH_NOTES}.get(key, {})
        lines += ["| case | ours | authors' | difference | note |", "|---|---:|---:|---:|---|"]
        for case in cases:
            row = _row(key, tol, case, ours[key].get(case), theirs.get(case))
            if case in extra:
                row = row[:-2] + "; " + _cell(extra[case])
            lines.append(row)
        lines.append("")
    copy = ref.get("dci_swapped_copy", {})
    if copy:
        lines += [
            "## DCI as copied into hierarchical-disentanglement",
            "",
            "disentanglement_lib's DCI is oriented correctly: `_compute_dci(mus_train, ys_train, ...)` fits one",
            "model per factor from the codes, its importance matrix is codes x factors, disentanglement",
            "is the entropy over each code's row and completeness over each factor's column. The copy in",
            "hierarchical-disentanglement's `src/metrics.py` calls",
            "`train_test_split(gen_factors, latents)` and unpacks the result as",
            "`mus_train, mus_test, ys_train, ys_test`, so the *factors* take the place of the codes: it",
            "regresses each code on all factors and its importance matrix is factors x codes, which turns",
            "its disentanglement into a completeness and the other way round (its 90/10 split is",
            "unseeded). The swap shows where D and C differ, e.g. with a duplicated code:",
            "",
            "| case | ours D | ours C | copy's D | copy's C |",
            "|---|---:|---:|---:|---:|",
        ]
        for case in ours.get("dci_disentanglement", {}):
            v = copy.get(case, {})
            d = ours.get("dci_disentanglement", {}).get(case, {}).get("value")
            c = ours.get("dci_completeness", {}).get(case, {}).get("value")
            lines.append(f"| {case} | {_fmt(d)} | {_fmt(c)} | {_fmt(v.get('disentanglement'))} | "
                         f"{_fmt(v.get('completeness'))} |")
        lines.append("")
    lines += [
        "## How the authors' side is computed",
        "",
        "- hierarchical-disentanglement (`src/metrics.py`, imports only numpy, scipy, scikit-learn):",
        "  `R4_scores(V, Z)` and `R4c_scores(V, Z, Z_hier)` on the saved factors and codes (codes with",
        "  categoricals as option index + 1, columns reordered to its layout: categoricals first, then",
        "  continuous dims, each in pre-order), with `np.random.seed(0)` before each call;",
        "  `H_error` (needs the `edist` package) on the hierarchies' `to_reference()` form;",
        "  `purity_coverage(true, components)` with one component per predicted label.",
        "- disentanglement_lib (imported with `gin.tf` replaced by `gin`, the TensorFlow part unused):",
        "  DCI from `compute_importance_gbt` on the same train / test rows (its classifier for",
        "  label factors, on numpy's global random state; scikit-learn's",
        "  `GradientBoostingRegressor(random_state=0)` put in its place for continuous ones) and its",
        "  `disentanglement` / `completeness`; MIG from `_compute_mig` with the",
        "  `histogram_discretizer` (20 bins) of its `mig.gin`; SAP from `compute_score_matrix` per",
        "  factor (`continuous_factors` True for continuous factors); FactorVAE and beta-VAE from",
        "  `compute_factor_vae` / `compute_beta_vae_sklearn` with the `unsupervised_study_v1` settings,",
        "  on an adapter that gives the same numpy process disentanglement_lib's ground-truth-data",
        "  interface (each call seeds a numpy Generator from its RandomState), `RandomState(0)`.",
        "- lsbd-vae (`lsbd_vae/metrics/dlsbd_metric.py`): `dlsbd(grid, k_values)` over every",
        "  omega combination in -10..10 (`create_combinations_omega_values_range`), torus or",
        "  cylinder.",
        "",
        "## Regenerating",
        "",
        "1. `python -m benchmarks.metrics_agreement --inputs DIR` computes our side, renders this page and",
        "   saves every case to `DIR/<family>__<case>.npz` (families `array`, `lsbd`, `h_error`, `paths`;",
        "   array files hold `factors`, `codes`, `factor_active`, `factor_categorical`, the code hierarchy in",
        "   the reference format, and the `train` / `test` rows of our DCI and SAP). The interventional",
        "   scores need the processes themselves: import this script and use `processes()`.",
        "2. Run the authors' functions as listed above on those files and write their numbers into the",
        "   `reference` section of `metrics_agreement.json` (`reference[metric][case] = {\"value\": ...}`,",
        "   with `\"nan\": true` for a NaN and `\"error\"` for an exception), with `_sources` (the commits)",
        "   and `_inputs` (`digest()` of every file's arrays, so that this page can flag stale numbers).",
        "3. `python -m benchmarks.metrics_agreement --markdown-only` re-renders the page.",
        "",
    ]
    (RESULTS / "metrics_agreement.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, help="save every case's inputs to this folder")
    parser.add_argument("--markdown-only", action="store_true", help="re-render the table from the saved JSON")
    args = parser.parse_args()
    previous = json.loads(JSON_PATH.read_text()) if JSON_PATH.exists() else {}
    if args.markdown_only:
        write_markdown(previous)
        return
    if args.inputs is not None:
        args.inputs.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    results, digests = compute_ours(args.inputs)
    report = {
        "settings": {
            "n_rows": N_ROWS, "metric_seed": METRIC_SEED, "votes": VOTES,
            "num_variance_estimate": NUM_VARIANCE_ESTIMATE, "grid": GRID, "hierarchical": HIER_NAME,
        },
        "ours": results,
        "inputs": digests,
        "reference": previous.get("reference", {}),
    }
    print(f"total {time.perf_counter() - start:.0f} s")
    RESULTS.mkdir(parents=True, exist_ok=True)
    JSON_PATH.write_text(json.dumps(report, indent=1, default=float) + "\n")
    write_markdown(report)


if __name__ == "__main__":
    main()
