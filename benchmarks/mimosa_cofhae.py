"""Quality of MIMOSA + COFHAE against flat baselines (paper Table 1 and Fig. 3).

For each dataset: draw a training set and a test set from the generative process
(different seeds), run the whole method (Softplus AE -> MIMOSA -> COFHAE), and train
the AE and beta-TCVAE (beta = 5) baselines with as many latent dimensions as the
true hierarchy's flat layout. Records:

- ``model = "MIMOSA"``: purity, coverage and H-error of the learned hierarchy and
  assignments on the training set;
- ``model = "COFHAE" | "AE" | "BetaTCVAE"``: R4c and R4 of the test-set codes (the
  baselines' codes are one flat group, always active).

    python -m benchmarks.mimosa_cofhae                        # the four depth-2 configs
    python -m benchmarks.mimosa_cofhae --datasets spaceshapes --train-size 20000

Results go to ``docs/results/mimosa_cofhae.json`` (a list of records) and
``docs/results/mimosa_cofhae.md``. The defaults are smaller than the paper's
(90,000 examples, 50 epochs) so that the run fits a CPU; pass larger values to get
closer to it.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import keras
import numpy as np

import hier_datasets
import hier_metrics
from benchmarks.study import RESULTS
from hier_datasets.hierarchy import Hierarchy
from hier_models import AE, BetaTCVAE, paper_settings
from hier_models.hierarchical import fit_hierarchical
from hier_models.training import fit_paper_schedule

DEPTH2 = [f"chopsticks/depth2_{v}" for v in ("slope", "inter", "both", "either")]


def train_baseline(cls, x, latent_dim, epochs, batch_size, seed, **options):
    keras.utils.set_random_seed(seed)  # the initial weights (random_state seeds the rest)
    model = cls(x.shape[1:], latent_dim=latent_dim, random_state=seed, **options)
    fit_paper_schedule(model, x, epochs=epochs, batch_size=batch_size, random_state=seed)
    return model


def scores(gt, factors, codes, code_hierarchy, seed) -> dict:
    active = gt.active(factors)
    return {
        "r4c": hier_metrics.r4c(factors, codes, factor_active=active, code_hierarchy=code_hierarchy, random_state=seed)["score"],
        "r4": hier_metrics.r4(factors, codes, random_state=seed)["score"],
    }


def run_dataset(name: str, args, seed: int) -> list[dict]:
    gt = hier_datasets.ground_truth(name)
    train_f, train_x = gt.sample(args.train_size, np.random.default_rng([seed, 0]))
    test_f, test_x = gt.sample(args.test_size, np.random.default_rng([seed, 1]))
    records = []
    common = {"dataset": name, "seed": seed, "train_size": args.train_size, "test_size": args.test_size, "epochs": args.epochs}
    start = time.perf_counter()
    mimosa_options = paper_settings(name)
    initial_dim = mimosa_options.pop("initial_dim")
    fit = fit_hierarchical(train_x, initial_dim=initial_dim, epochs=args.epochs, batch_size=args.batch_size,
                           random_state=seed, mimosa_options=mimosa_options)
    records.append({
        **common, "model": "MIMOSA",
        "purity": hier_metrics.purity(gt.paths(train_f), fit.assignments),
        "coverage": hier_metrics.coverage(fit.assignments),
        "h_error": hier_metrics.h_error(fit.hierarchy, gt.hierarchy),
        "learned_hierarchy": fit.hierarchy.to_json(),
    })
    records.append({**common, "model": "COFHAE",
                    **scores(gt, test_f, fit.model.encode(test_x), fit.hierarchy, seed),
                    "seconds": time.perf_counter() - start})
    width = gt.hierarchy.num_dims
    flat = Hierarchy.flat(width)
    for label, cls, options in (("AE", AE, {}), ("BetaTCVAE", BetaTCVAE, {"beta": 5.0})):
        start = time.perf_counter()
        model = train_baseline(cls, train_x, width, args.epochs, args.batch_size, seed, **options)
        records.append({**common, "model": label,
                        **scores(gt, test_f, model.encode(test_x), flat, seed),
                        "seconds": time.perf_counter() - start})
    return records


def _key(record: dict) -> tuple:
    return record["dataset"], record["train_size"], record["epochs"], record["seed"], record["model"]


def markdown(records: list[dict]) -> str:
    lines = [
        "# MIMOSA + COFHAE quality",
        "",
        "`python -m benchmarks.mimosa_cofhae [--train-size N --epochs E --merge]`; test sets of",
        "5,000 fresh examples of the same process; batch 256.",
        "",
        "Superseded: these are early single runs (one seed, unseeded initial weights, COFHAE at its",
        "default configuration). `ross2021.md` (`python -m benchmarks.ross2021`) repeats the",
        "paper's protocol on the registered splits, with five seeded restarts and each COFHAE",
        "selected from the 27-configuration grid; quote it, not this page.",
        "",
        "| dataset | train | epochs | seed | MIMOSA purity | coverage | H-error | COFHAE R4c | R4 | AE R4c | R4 "
        "| beta-TCVAE R4c | R4 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keyed = {_key(r): r for r in records}
    for key in dict.fromkeys(_key(r)[:-1] for r in records):
        m = keyed[(*key, "MIMOSA")]
        cells = [f"{m['purity']:.3f}", f"{m['coverage']:.3f}", str(m["h_error"])]
        for model in ("COFHAE", "AE", "BetaTCVAE"):
            r = keyed[(*key, model)]
            cells += [f"{r['r4c']:.3f}", f"{r['r4']:.3f}"]
        dataset, train, epochs, seed = key
        lines.append(f"| {dataset} | {train:,} | {epochs} | {seed} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=DEPTH2)
    parser.add_argument("--train-size", type=int, default=20_000)
    parser.add_argument("--test-size", type=int, default=5_000)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--out", type=Path, default=RESULTS / "mimosa_cofhae.json")
    parser.add_argument("--merge", action="store_true", help="keep the records of other settings already in --out")
    args = parser.parse_args(argv)
    records = []
    for name in args.datasets:
        for seed in args.seeds:
            records += run_dataset(name, args, seed)
            print(markdown(records), flush=True)
    if args.merge and args.out.exists():
        new = {_key(r) for r in records}
        records = [r for r in json.loads(args.out.read_text()) if _key(r) not in new] + records
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(records, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(records))


if __name__ == "__main__":
    main()
