"""What each part of COFHAE contributes: Figs. 4 and 10 of Ross & Doshi-Velez (2021).

The paper (section 7, Figs. 4 and 10) trains autoencoders given more and more of the
ground truth: a flat autoencoder (Flat), one with the true hierarchy (Hier H), plus
supervision of the true assignments (H+A), plus a marginal TC penalty on the
continuous codes (H+A+TC(Z)), plus the conditional one instead (H+A+TC(Z|on), i.e.
COFHAE), and one whose continuous codes are supervised too (H+A+Z, near-optimal);
H+TC(Z|on) drops the assignment supervision. Only H+A+TC(Z|on) comes close to H+A+Z.
Here each variant trains on the registered training split with the true hierarchy and
targets from the true factors (:func:`hier_models.cofhae.targets_from_factors`; H+A+Z's
continuous targets standardised, so its supervision weighs every factor alike), the
authors' default COFHAE setting (tau 1, lambda_assign 100, lambda_tc 10) and the
paper's schedule, 50 epochs; Flat is an autoencoder with as many codes as the
hierarchy has dimensions. Every metric is scored on the test split, so the records
also serve Fig. 5 (the metrics side by side, H+A+Z the reference). One record per run
in ``docs/results/cofhae_components.json``, appended as it finishes; a rerun skips
those there, and a run stopped part-way resumes at the epoch it was on (its checkpoint
beside the kept model, ``<model>.keras.backup/``, kept through scoring).

    python -m benchmarks.cofhae_components --discriminator-units 256     # depth-2 both, restarts 0-4
    python -m benchmarks.cofhae_components --datasets chopsticks/depth2_either --discriminator-units 256
    python -m benchmarks.cofhae_components --render
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import keras
import numpy as np

import hier_datasets
from benchmarks.ross2021 import Study, add_restart_arguments, as_float
from benchmarks.study import NOTES_MARK, RESULTS, kept_notes, load_records, machine, mean_std, run_missing
from hier_models import AE, COFHAE, BetaTCVAE
from hier_models.cofhae import targets_from_factors
from hier_models.training import ResumableFit, fit_paper_schedule
from hierbench.files import save_keras

#: the paper's label of each variant -> COFHAE's ablation (None: a flat model of :data:`FLAT`)
VARIANTS = {"Flat": None, "Hier H": "H", "H+A": "H+A", "H+A+TC(Z)": "H+A+TC(Z)", "COFHAE": "H+A+TC(Z|on)",
            "H+A+Z": "H+A+Z", "H+TC(Z|on)": "H+TC(Z|on)", "beta-TCVAE": None}
#: the flat models, with as many codes as the hierarchy has dimensions; beta-TCVAE
#: (beta 5, as in Fig. 3) is Fig. 5's, not Fig. 4's
FLAT = {"Flat": (AE, {}), "beta-TCVAE": (BetaTCVAE, {"beta": 5.0})}
FIG4 = [v for v in VARIANTS if v != "beta-TCVAE"]
#: Fig. 5's metrics: record key -> label
FIG5_METRICS = {"sap": "SAP", "mig": "MIG", "factor_vae_eval_accuracy": "FactorVAE score",
                "dci_disentanglement": "DCI disentanglement", "r4": "R4", "r4c": "R4c"}


def run_variant(study: Study, dataset: str, seed: int, variant: str) -> dict:
    (train_f, train_x), _ = study.data(dataset)
    x = as_float(train_x)
    gt = hier_datasets.ground_truth(dataset)
    ablation = VARIANTS[variant]
    keras.utils.set_random_seed(seed)  # the weights' initialisation (random_state seeds the rest)
    path = study.model_path(dataset, "components-" + re.sub(r"[^A-Za-z0-9]+", "_", variant).strip("_"), seed)
    resume = ResumableFit(f"{path}.backup", remove_when_done=False)  # kept through scoring
    options, targets = {}, None
    if ablation is None:
        cls, flat_options = FLAT[variant]
        net = cls(x.shape[1:], latent_dim=gt.hierarchy.num_dims, random_state=seed, **flat_options)
    else:
        options = study.discriminator_options() if "TC" in ablation else {}
        net = COFHAE(x.shape[1:], gt.hierarchy, ablation=ablation, random_state=seed, **options)
        targets = targets_from_factors(gt.hierarchy, train_f)
    fit_paper_schedule(net, x, targets, epochs=study.args.epochs, batch_size=256, random_state=seed,
                       callbacks=study.progress(variant), resume=resume)
    save_keras(net, path)
    record = {"dataset": dataset, "variant": variant, "ablation": ablation, "seed": seed, "train_size": len(x),
              "epochs": study.args.epochs,
              "discriminator_units": options.get("discriminator_units"),
              **study.test_scores(dataset, net, None if ablation is None else gt.hierarchy, seed),
              "seconds": resume.seconds, "machine": machine()}  # over every call it was resumed in
    resume.discard()
    return record


# --------------------------------------------------------------------- page
def draw(records: list[dict], datasets: list[str], path: Path) -> None:
    """Fig. 4's manner (R4c per variant, every restart a point) and Fig. 5's (each
    metric per variant, the mean over restarts) for each dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(datasets), 2, figsize=(13, 3.4 * len(datasets)), squeeze=False)
    labels = list(VARIANTS)
    for i, dataset in enumerate(datasets):
        runs = [r for r in records if r["dataset"] == dataset]
        ax = axes[i, 0]
        for k, variant in enumerate(FIG4):
            values = [r["r4c"] for r in runs if r["variant"] == variant]
            ax.plot([k] * len(values), values, "o", ms=4, alpha=0.6, color="C0")
            if values:
                ax.plot([k - 0.3, k + 0.3], [np.mean(values)] * 2, color="C3")
        ax.set_xticks(range(len(FIG4)), FIG4, rotation=30, fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("R4c (test)")
        ax.set_title(f"Fig. 4: {dataset}", fontsize=9)
        ax = axes[i, 1]
        width = 0.8 / len(FIG5_METRICS)
        for m, (key, label) in enumerate(FIG5_METRICS.items()):
            means = [np.mean([r[key] for r in runs if r["variant"] == v]) if any(r["variant"] == v for r in runs)
                     else np.nan for v in labels]
            ax.bar(np.arange(len(labels)) + (m - len(FIG5_METRICS) / 2 + 0.5) * width, means, width, label=label)
        ax.set_xticks(range(len(labels)), labels, rotation=30, fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.set_title(f"Fig. 5: every metric, {dataset}", fontsize=9)
        ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(records: list[dict], out: Path) -> None:
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    page = out.with_suffix(".md")
    lines = [
        "# What each part of COFHAE contributes (Ross & Doshi-Velez 2021, Figs. 4, 5 and 10)",
        "",
        "`python -m benchmarks.cofhae_components`: autoencoders given more and more of the ground truth "
        "(the true hierarchy, assignment targets and, for H+A+Z, continuous targets from the true factors), "
        "the authors' default COFHAE setting, 50 epochs on the registered training split; every metric on "
        "the test split. Mean ± sample std over restarts (how many in brackets). The discriminator of the "
        "TC variants is named per row. Fig. 5 adds beta-TCVAE (beta 5) to the flat models.",
        "",
        "The paper (section 7, Figs. 4 and 10): disentanglement is low for Flat, better with H, better again "
        "with H+A; a marginal TC penalty sometimes helps, the conditional one (COFHAE) more, close to the "
        "near-optimal H+A+Z; the hardest datasets (Spaceshapes, depth-3 compound Chopsticks) are the "
        "exceptions. Fig. 5: of SAP, MIG, the FactorVAE score, DCI, R4 and R4c, only R4 and R4c give the "
        "near-optimal H+A+Z near-perfect scores.",
        "",
        "![R4c per variant, and every metric per variant](cofhae_components.png)",
        "",
        "| dataset | variant | discriminator | R4c (restarts) | R4 | "
        + " | ".join(label for key, label in FIG5_METRICS.items() if key not in ("r4", "r4c")) + " |",
        "|---|---|---|---:|---:|" + "---:|" * (len(FIG5_METRICS) - 2),
    ]
    for dataset in datasets:
        for variant in VARIANTS:
            runs = [r for r in records if r["dataset"] == dataset and r["variant"] == variant]
            if not runs:
                continue
            units = {str(r["discriminator_units"]) for r in runs}
            cells = [mean_std([r[key] for r in runs]) for key in FIG5_METRICS if key not in ("r4", "r4c")]
            lines.append(f"| {dataset} | {variant.replace('|', '&#124;')} | {', '.join(sorted(units)).replace('None', '-')} | "
                         f"{mean_std([r['r4c'] for r in runs])} ({len(runs)}) | {mean_std([r['r4'] for r in runs])} | "
                         + " | ".join(cells) + " |")
    lines += ["", NOTES_MARK]
    page.write_text("\n".join(lines) + kept_notes(page))
    draw(records, datasets, out.with_suffix(".png"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["chopsticks/depth2_both"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--discriminator-units", type=int, default=None,
                        help="width of the TC variants' 3 discriminator layers (default 1000, the paper's)")
    parser.add_argument("--test-size", type=int, default=None)
    parser.add_argument("--interventional-points", type=int, default=10_000)
    add_restart_arguments(parser, RESULTS / "cofhae_components.json", "where trained models are kept")
    args = parser.parse_args(argv)
    if not args.render:
        study = Study.configured(cache=args.cache, train_size=args.train_size, test_size=args.test_size,
                                 epochs=args.epochs, quiet=args.quiet, discriminator_units=args.discriminator_units,
                                 interventional_points=args.interventional_points)
        units = study.discriminator_options()["discriminator_units"]

        def key(r: dict) -> tuple:
            return r["dataset"], r["variant"], r["seed"], r["train_size"], r["epochs"], str(r["discriminator_units"])

        planned = ({"dataset": dataset, "variant": variant, "seed": seed, "epochs": args.epochs,
                    "train_size": study.sizes(dataset)[0],
                    "discriminator_units": units if VARIANTS[variant] is not None and "TC" in VARIANTS[variant] else None}
                   for seed in args.seeds for dataset in args.datasets for variant in args.variants)  # restart by restart
        run_missing(args.out, planned, key, lambda unit: run_variant(study, unit["dataset"], unit["seed"], unit["variant"]),
                    lambda r: f"{r['dataset']} {r['variant']} restart {r['seed']}: R4c {r['r4c']:.3f} in "
                              f"{r['seconds'] / 60:.1f} min")
    records = load_records(args.out)
    if records:
        render(records, args.out)


if __name__ == "__main__":
    main()
