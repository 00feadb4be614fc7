"""Where each factor sits in a model that the Ross & Doshi-Velez study kept.

R4c says how well each factor is held by one code; this probe says why a factor
scores low: is it missing from the representation, or present but mixed over several
codes? For every true path of the test split it takes the observations that the model
sends to its majority learned path (COFHAE) or all of them (flat models), and for each
continuous factor active on the true path reports the 3-fold cross-validated R^2 of

- the best single code of that learned path (what R4c rewards),
- all its active continuous codes jointly, with gradient-boosted trees,
- all of them jointly, linearly (is the mix a rotation, or nonlinear?).

A factor with a high joint R^2 and a low single one is entangled within its group; a
low joint R^2 means the model lost it. The models are those the study stored in its
cache (``<dataset>-n<size>-e<epochs>-s<seed>.<model>.keras``):

    python -m benchmarks.ross2021_probe spaceshapes COFHAE-ST
    python -m benchmarks.ross2021_probe chopsticks/depth2_either COFHAE --seed 0
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import KFold, cross_val_score

import hier_datasets
from benchmarks.ross2021 import PAPER_DATASETS, REFERENCE_DATASETS, as_float, cache_stem, kept_model, registered_sizes, split
from hier_datasets.hierarchy import Hierarchy
from hierbench.models import load_model

#: below this many observations a path's R^2 is not reported
MIN_ROWS = 30


def cv_r2(regressor, x: np.ndarray, y: np.ndarray, seed: int) -> float:
    folds = KFold(3, shuffle=True, random_state=seed)
    return float(np.mean(cross_val_score(regressor, x, y, cv=folds, scoring="r2")))


def learned_groups(model, codes: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], list[str]]:
    """Per observation, the learned path; per learned path, its active continuous code
    columns and a label. A flat model has one path holding every code."""
    hierarchy: Hierarchy | None = getattr(model, "hierarchy", None)
    if hierarchy is None:
        return np.zeros(len(codes), dtype=int), [np.arange(codes.shape[1])], ["all codes"]
    columns = [np.flatnonzero(active & ~hierarchy.is_categorical) for active in hierarchy.path_active]
    return hierarchy.path_index(codes), columns, list(hierarchy.path_names)


def probe(name: str, model, test_size: int, seed: int) -> list[dict]:
    """One row per (true path, active continuous factor) of the test split."""
    gt = hier_datasets.ground_truth(name)
    truth = gt.hierarchy
    factors, observations = split(name, "test", test_size)
    codes = np.asarray(model.encode(as_float(observations)), dtype=np.float64)
    learned, columns, labels = learned_groups(model, codes)
    true_paths = gt.paths(factors)
    rows = []
    for p, path_name in enumerate(truth.path_names):
        members = true_paths == p
        if not members.any():
            continue
        group = int(np.bincount(learned[members]).argmax())
        rows_in = members & (learned == group)
        x = codes[rows_in][:, columns[group]]
        for d in np.flatnonzero(truth.path_active[p] & ~truth.is_categorical):
            y = factors[rows_in, d].astype(np.float64)
            row = {"true path": path_name, "learned path": labels[group], "n": int(rows_in.sum()),
                   "of": int(members.sum()), "factor": truth.names[d]}
            if len(y) >= MIN_ROWS and x.shape[1] and np.ptp(y) > 0:
                trees = HistGradientBoostingRegressor(random_state=seed)
                row["best single"] = max(cv_r2(trees, x[:, [j]], y, seed) for j in range(x.shape[1]))
                row["jointly"] = cv_r2(trees, x, y, seed)
                row["jointly, linear"] = cv_r2(LinearRegression(), x, y, seed)
            rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = ["true path", "learned path (n of N)", "factor", "best single code", "jointly", "jointly, linear"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---:|---:|---:|"]
    for r in rows:
        scores = [f"{r[k]:.3f}" if k in r else "-" for k in ("best single", "jointly", "jointly, linear")]
        cells = [r["true path"], f"{r['learned path']} ({r['n']:,} of {r['of']:,})", r["factor"], *scores]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=PAPER_DATASETS + REFERENCE_DATASETS)
    parser.add_argument("model", help="the model's name in the study (COFHAE, COFHAE-ST, AE, BetaTCVAE, FactorVAE)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--train-size", type=int, default=None, help="default: the registered split size")
    parser.add_argument("--test-size", type=int, default=None, help="default: the registered split size")
    parser.add_argument("--cache", type=Path, default=Path("runs/ross2021-cache"))
    args = parser.parse_args(argv)
    train, test = registered_sizes(args.dataset)
    path = kept_model(cache_stem(args.cache, args.dataset, args.train_size or train, args.epochs, args.seed), args.model)
    if not path.exists():
        parser.error(f"no kept model at {path}; run the study for it first (python -m benchmarks.ross2021)")
    print(f"{args.dataset}, {args.model}, seed {args.seed}: test split, 3-fold R^2\n")
    print(table(probe(args.dataset, load_model(path), args.test_size or test, args.seed)))


if __name__ == "__main__":
    main()
