"""MIMOSA under observation noise: Fig. 8 of Ross & Doshi-Velez (2021).

The paper (appendix A.3, Fig. 8) corrupts Chopsticks series with Gaussian noise,
trains the smooth autoencoder on them and runs MIMOSA on its codes, for two
Chopsticks variants; noise troubles most the lowest-dimensional components (1-D
components found as 2-D or 3-D), and tuning would help, but there are no labels to
tune on. Here: for each dataset, noise level and restart, the registered training
split's factors are observed through Chopsticks' own Gaussian observation noise of
that standard deviation (``ground_truth(name, noise=sigma)``; the factors are those
of the noise-free split), the smooth autoencoder of ``benchmarks.ross2021`` trains on
them (restart ``s`` seeds it as there; noise 0 is that study's restart ``s``, shared
through the cache), and MIMOSA runs with the paper's settings. Coverage, purity and
H-error are scored against the true paths, and the share of points whose local
dimensionality MIMOSA estimates above the true one shows where noise bites. One
record per run in ``docs/results/mimosa_noise.json``, appended as it finishes; a rerun
skips those there.

For scale: Chopsticks intercept offsets are at most 0.2 and slope offsets at most
0.01 a step (so a slope adds up to 0.64 over a series).

    python -m benchmarks.mimosa_noise                        # two variants, 6 levels, restarts 0-4
    python -m benchmarks.mimosa_noise --render               # only redraw the page
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import hier_datasets
from benchmarks.ross2021 import Study, add_restart_arguments, split
from benchmarks.study import NOTES_MARK, RESULTS, kept_notes, load_records, machine, mean_std, mimosa_scores, run_missing
from hier_models import NoHierarchyFound, fit_mimosa, paper_settings

DATASETS = ["chopsticks/depth2_either", "chopsticks/depth2_both"]
NOISE = [0.0, 0.002, 0.005, 0.01, 0.02, 0.05]
METRICS = ("coverage", "purity", "h_error", "overestimated_dims")


def true_dims(gt, factors: np.ndarray) -> np.ndarray:
    """Each point's intrinsic dimensionality: the number of continuous factors of its path."""
    return np.array([gt.hierarchy.path_dim(p) for p in range(gt.hierarchy.num_paths)])[gt.paths(factors)]


def run_point(study: Study, dataset: str, seed: int, noise: float) -> dict:
    (factors, _), _ = study.data(dataset)
    gt = hier_datasets.ground_truth(dataset)
    codes, times = study.cached_codes(dataset, seed, noise=noise)
    options = paper_settings(dataset)
    options.pop("initial_dim")
    start = time.perf_counter()
    record = {"dataset": dataset, "seed": seed, "train_size": len(factors), "noise": noise}
    try:
        result = fit_mimosa(codes, tree="kd", **options)
    except NoHierarchyFound as err:
        record.update(coverage=0.0, purity=None, h_error=None, overestimated_dims=None, no_hierarchy=str(err))
    else:
        record.update(mimosa_scores(gt, factors, result.hierarchy, result.assignments),
                      overestimated_dims=float(np.mean(result.local_dims > true_dims(gt, factors))),
                      learned_hierarchy=result.hierarchy.to_json())
    return {**record, "seconds_mimosa": time.perf_counter() - start, **times, "machine": machine()}


# --------------------------------------------------------------------- page
def by_level(records: list[dict], dataset: str, metric: str) -> dict:
    """{noise: [the metric of each restart]} (runs without a hierarchy left out)."""
    out: dict = {}
    for r in records:
        if r["dataset"] == dataset and r[metric] is not None:
            out.setdefault(r["noise"], []).append(r[metric])
    return dict(sorted(out.items()))


def draw(records: list[dict], datasets: list[str], path: Path) -> None:
    """Fig. 8's panels (a) and (c): one series of each dataset at every noise level,
    and the metrics against the noise (every restart a point, the mean a line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 1 + len(METRICS), figsize=(4 * (1 + len(METRICS)), 3.2))
    levels = sorted({r["noise"] for r in records})
    dataset = datasets[0]
    factors, _ = split(dataset, "train", 100)
    shown = int(np.argmax(true_dims(hier_datasets.ground_truth(dataset), factors)))  # one that chops most
    for i, noise in enumerate(levels):
        _, noisy = split(dataset, "train", 100, noise)
        axes[0].plot(noisy[shown] + 0.5 * i, lw=1, label=f"noise {noise:g}")
    axes[0].set_title(f"(a) a {dataset.split('/')[1]} series, shifted up per level", fontsize=9)
    axes[0].legend(fontsize=7)
    titles = {"coverage": "coverage", "purity": "purity", "h_error": "H-error",
              "overestimated_dims": "points with local dim. too high"}
    for ax, metric in zip(axes[1:], METRICS):
        for k, name in enumerate(datasets):
            got = by_level(records, name, metric)
            for noise, values in got.items():
                ax.plot([noise] * len(values), values, "o", ms=3, color=f"C{k}", alpha=0.5)
            ax.plot(list(got), [np.mean(v) for v in got.values()], "-", color=f"C{k}", label=name.split("/")[1])
        ax.set_xlabel("observation noise (std)")
        ax.set_title(titles[metric], fontsize=9)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(records: list[dict], out: Path) -> None:
    datasets = [d for d in dict.fromkeys(r["dataset"] for r in records)]
    page = out.with_suffix(".md")
    lines = [
        "# MIMOSA under observation noise (Ross & Doshi-Velez 2021, Fig. 8)",
        "",
        "`python -m benchmarks.mimosa_noise`: the training split observed through Gaussian noise, "
        "the smooth autoencoder trained on it, MIMOSA with the paper's settings; mean ± sample std "
        "over restarts (how many in each cell). The last column is the share of points whose local "
        "dimensionality MIMOSA estimates above the true one.",
        "",
        "The paper (appendix A.3, Fig. 8): noise poses the greatest problem for identifying the "
        "lowest-dimensional components (1-D components classified as 2-D or 3-D); tuning the "
        "hyperparameters would help, but without labels there is nothing to tune on. It shows no "
        "numbers in its text.",
        "",
        "![noisy series and MIMOSA's scores against the noise](mimosa_noise.png)",
        "",
        "| dataset | noise | restarts | coverage | purity | H-error | local dim. too high |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for dataset in datasets:
        for noise in sorted({r["noise"] for r in records if r["dataset"] == dataset}):
            runs = [r for r in records if r["dataset"] == dataset and r["noise"] == noise]
            cells = [mean_std([r[m] for r in runs if r[m] is not None]) if any(r[m] is not None for r in runs)
                     else "no hierarchy" for m in METRICS]
            lines.append(f"| {dataset} | {noise:g} | {len(runs)} | {' | '.join(cells)} |")
    lines += ["", NOTES_MARK]
    page.write_text("\n".join(lines) + kept_notes(page))
    draw(records, datasets, out.with_suffix(".png"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--noise", type=float, nargs="+", default=NOISE)
    add_restart_arguments(parser, RESULTS / "mimosa_noise.json",
                          "smooth-autoencoder codes (shared with benchmarks.ross2021)")
    args = parser.parse_args(argv)
    if not args.render:
        study = Study.configured(cache=args.cache, train_size=args.train_size, epochs=args.epochs, quiet=args.quiet)
        planned = ({"dataset": dataset, "seed": seed, "train_size": study.sizes(dataset)[0], "noise": noise}
                   for seed in args.seeds for dataset in args.datasets for noise in args.noise)  # restart by restart
        run_missing(args.out, planned, lambda r: (r["dataset"], r["seed"], r["train_size"], r["noise"]),
                    lambda unit: run_point(study, unit["dataset"], unit["seed"], unit["noise"]),
                    lambda r: f"{r['dataset']} restart {r['seed']} noise {r['noise']:g}: coverage {r['coverage']:.3f} "
                              f"H-error {r['h_error']}")
    records = load_records(args.out)
    if records:
        render(records, args.out)


if __name__ == "__main__":
    main()
