"""DCI's two backends side by side: speed against disentanglement_lib's procedure, and
agreement on every registered dataset.

1. Speed: 10,000 points of Chopsticks depth-2 ``either`` with a noisy, partly mixed code
   (below), scored by disentanglement_lib's procedure (scikit-learn's default boosted
   trees per factor, fitted on 10,000 training points and scored on 5,000 more: its
   ``compute_dci`` defaults) and by ``hier_metrics.dci(..., backend="lightgbm")`` on the
   same 10,000 points (a 2/3 : 1/3 split), best of ``--repeats`` alternating runs.
2. Agreement: on every registered dataset, ``importance_matrix`` with both backends on
   the same split of ``--agreement-points`` points of the same kind of code: the
   largest difference of the per-factor importances (each factor's column sums to 1
   in both) and of D, C and I.

The code: each factor standardised, squashed by ``tanh``, with Gaussian noise (0.1) and
two pure-noise dimensions, then 30% of a random rotation mixed in, so that neither D
nor C is near 0 or 1.

    python -m benchmarks.dci_backends            # results in docs/results/dci_backends.{json,md}
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import hier_datasets
import hier_metrics as hm
from benchmarks.study import RESULTS, machine

DATASETS = ([f"chopsticks/depth{d}_{v}" for d in (2, 3) for v in ("inter", "slope", "both", "either")]
            + ["spaceshapes", "boxhead/boxhead1", "boxhead/boxhead2", "boxhead/boxhead3"])


def mixed_code(factors: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    spread = factors.std(axis=0)
    base = np.tanh(factors / np.where(spread > 0, spread, 1.0)) + 0.1 * rng.normal(size=factors.shape)
    base = np.column_stack([base, rng.normal(size=(len(factors), 2))])
    rotation, _ = np.linalg.qr(rng.normal(size=(base.shape[1],) * 2))
    return 0.7 * base + 0.3 * base @ rotation


def factors_of(name: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` factors of ``name`` and which of them are categorical."""
    gt = hier_datasets.ground_truth(name, **({"workers": 0} if name.startswith("boxhead") else {}))
    return gt.sample_factors(n, seed).astype(np.float64), np.asarray(gt.hierarchy.is_categorical)


def disentanglement_lib_dci(train_f, train_z, test_f, test_z, categorical) -> dict:
    """disentanglement_lib's ``compute_dci``: a default boosted-tree model per factor on
    the training points, its importances, and its accuracy (R^2 here for continuous
    factors) on the test points."""
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

    importance = np.zeros((train_f.shape[1], train_z.shape[1]))  # factors x codes
    for j in range(train_f.shape[1]):
        model = GradientBoostingClassifier() if categorical[j] else GradientBoostingRegressor()
        y = train_f[:, j].astype(np.int64) if categorical[j] else train_f[:, j]
        model.fit(train_z, y)
        importance[j] = np.abs(model.feature_importances_)
        model.score(test_z, test_f[:, j].astype(np.int64) if categorical[j] else test_f[:, j])
    return hm.dci_from_importance(importance)


def speed(name: str, repeats: int) -> dict:
    f, categorical = factors_of(name, 15_000, 0)
    z = mixed_code(f, 0)
    times = {"disentanglement_lib": [], "lightgbm": []}
    for _ in range(repeats):
        start = time.perf_counter()
        dlib = disentanglement_lib_dci(f[:10_000], z[:10_000], f[10_000:], z[10_000:], categorical)
        times["disentanglement_lib"].append(time.perf_counter() - start)
        start = time.perf_counter()
        fast = hm.dci(f[:10_000], z[:10_000], categorical=categorical, backend="lightgbm")
        times["lightgbm"].append(time.perf_counter() - start)
    best = {k: min(v) for k, v in times.items()}
    return {"dataset": name, "points": 10_000, "seconds": best, "ratio": best["disentanglement_lib"] / best["lightgbm"],
            "disentanglement": {"disentanglement_lib": dlib["disentanglement"], "lightgbm": fast["disentanglement"]}}


def agreement(name: str, n: int) -> dict:
    f, categorical = factors_of(name, n, 1)
    z = mixed_code(f, 1)
    rows = {}
    for backend in ("sklearn", "lightgbm"):
        start = time.perf_counter()
        imp = hm.importance_matrix(f, z, categorical=categorical, backend=backend, random_state=0)
        seconds = time.perf_counter() - start
        varying = np.flatnonzero(~np.isnan(imp["informativeness_test"]))
        scores = hm.dci_from_importance(imp["importance"][varying])
        rows[backend] = {"importance": imp["importance"][varying], "seconds": seconds,
                         "D": scores["disentanglement"], "C": scores["completeness"],
                         "I": float(np.mean(imp["informativeness_test"][varying]))}
    a, b = rows["sklearn"], rows["lightgbm"]
    return {"dataset": name, "points": n, "factors": int(a["importance"].shape[0]),
            "importance_max_difference": float(np.abs(a["importance"] - b["importance"]).max()),
            **{f"{k}_{backend}": rows[backend][k] for k in ("D", "C", "I", "seconds") for backend in rows}}


def render(report: dict, page: Path) -> None:
    s = report["speed"]
    lines = [
        "# DCI backends: LightGBM against disentanglement_lib's boosted trees",
        "",
        f"`python -m benchmarks.dci_backends`: {report['machine']}, one thread per fit, cores shared with other work.",
        "",
        f"Speed ({s['dataset']}, {s['points']:,} points, best of {report['repeats']} alternating runs): "
        f"disentanglement_lib's procedure {s['seconds']['disentanglement_lib']:.1f} s, "
        f"`dci(..., backend=\"lightgbm\")` {s['seconds']['lightgbm']:.2f} s: **{s['ratio']:.0f}x** "
        f"(target: at least 10x). D {s['disentanglement']['disentanglement_lib']:.3f} against "
        f"{s['disentanglement']['lightgbm']:.3f} (different training points).",
        "",
        f"Agreement ({report['agreement_points']:,} points per dataset, one split, both backends): largest "
        "difference of the per-factor importances (each factor's column sums to 1) and the three scores.",
        "",
        "| dataset | factors | importances max diff | D default / lightgbm | C default / lightgbm | "
        "I default / lightgbm | seconds default / lightgbm |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["agreement"]:
        lines.append(
            f"| {r['dataset']} | {r['factors']} | {r['importance_max_difference']:.3f} | "
            f"{r['D_sklearn']:.3f} / {r['D_lightgbm']:.3f} | {r['C_sklearn']:.3f} / {r['C_lightgbm']:.3f} | "
            f"{r['I_sklearn']:.3f} / {r['I_lightgbm']:.3f} | {r['seconds_sklearn']:.1f} / {r['seconds_lightgbm']:.1f} |"
        )
    lines += ["", "Each depth's `inter` and `slope` configs have the same factors up to their scale (offsets "
              "drawn alike, 0.2 against 0.01 wide), so after the code's standardisation their rows are equal."]
    worst = {k: max(abs(r[f"{k}_sklearn"] - r[f"{k}_lightgbm"]) for r in report["agreement"]) for k in "DCI"}
    lines += ["", "Largest differences over the datasets: " + ", ".join(f"{k} {v:.3f}" for k, v in worst.items())
              + f"; importances {max(r['importance_max_difference'] for r in report['agreement']):.3f}.", ""]
    page.write_text("\n".join(lines))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--agreement-points", type=int, default=5_000)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--out", type=Path, default=RESULTS / "dci_backends.json")
    parser.add_argument("--render", action="store_true", help="only redraw the page from the record")
    args = parser.parse_args(argv)
    if args.render:
        render(json.loads(args.out.read_text()), args.out.with_suffix(".md"))
        return
    m = machine()
    report = {"machine": f"{m['cpu']}, {m['cores']} cores", "repeats": args.repeats,
              "agreement_points": args.agreement_points, "speed": speed("chopsticks/depth2_either", args.repeats),
              "agreement": []}
    print(f"speed: {report['speed']['ratio']:.1f}x", flush=True)
    for name in args.datasets:
        report["agreement"].append(agreement(name, args.agreement_points))
        print(name, {k: round(v, 3) for k, v in report["agreement"][-1].items() if isinstance(v, float)}, flush=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    render(report, args.out.with_suffix(".md"))


if __name__ == "__main__":
    main()
