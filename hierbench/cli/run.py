"""``hierbench run``: build, train, score and report into a run folder; without
arguments, the embedded default benchmark (:mod:`hierbench.job`)."""
from __future__ import annotations

from pathlib import Path

from hierbench import library_facts
from hierbench.cli import COMMANDS
from hierbench.cli.arguments import (
    DATASET_HELP,
    add_command,
    add_common,
    add_interventional_option,
    add_training_options,
    hyperparameter_help,
    positive,
)
from hierbench.pages import metrics_table
from hierbench.settings import DEFAULT_RUN, RunSettings

__all__ = ["register"]


def _run(args) -> int:
    # the model code is imported here, not above, so that --help answers without TensorFlow
    from hierbench import options as model_options
    from hierbench.job import run

    models = [model_options.resolve_model(m) for m in args.models]
    settings = RunSettings(
        datasets=args.datasets, models=models, seeds=args.seeds,
        train_size=None if args.full_size else args.train_size, test_size=None if args.full_size else args.test_size,
        epochs=args.epochs, autoencoder_epochs=args.autoencoder_epochs, batch_size=args.batch_size,
        interventional_points=args.interventional_points, options=model_options.parse_options(args.set, models),
        data_dir=args.data_dir, out=args.out, grid=args.grid, halving=args.halving, strategy=args.strategy,
    )
    metrics, seconds = run(settings, show_progress=not args.quiet)
    print()
    print(metrics_table(metrics))
    print(f"\nreport: {Path(args.out) / 'report.html'} (summary.md, metrics.json and the figures beside it); "
          f"{seconds:.0f} s in all")
    return 0


def register(sub) -> None:
    d = DEFAULT_RUN
    p = add_command(
        sub, "run", _run, summary=COMMANDS["run"],
        description="The main job: build (or reuse) each dataset, train each model with each seed, score it with "
                    "every applicable metric, and write a report folder: metrics.json, summary.md with a models x "
                    "metrics table, a self-contained report.html, and the figures (factor-vs-code histograms where "
                    "both are active with per-factor R4c, latent traversals, the learned hierarchy beside the true "
                    "one with per-path purity, MIMOSA's components coloured by true path)."
                    f"\n\nWithout arguments: {d.describe()}; about 5 minutes on 2 CPU cores."
                    "\n\nThe same seed gives the same bytes on one machine. Another CPU can score differently, "
                    "within seed noise: oneDNN, which runs TensorFlow's matrix products, picks its kernels by the "
                    "instruction set; ONEDNN_MAX_CPU_ISA=AVX2 and the same TF_NUM_INTRAOP_THREADS and "
                    "TF_NUM_INTEROP_THREADS on every machine make them run the same kernels on the same threads. "
                    "run.json records the versions, CPU and settings.",
        epilog=hyperparameter_help() + "\n\nA plain --set KEY=VALUE goes to every model that takes KEY; "
               "MODEL.KEY=VALUE to one.\n\nexample: hierbench run --models AE VAE Hierarchical --seeds 0 1 "
               "--set VAE.beta=4 --out runs/vae",
    )
    p.add_argument("--datasets", nargs="+", default=list(d.datasets), metavar="NAME",
                   help=DATASET_HELP + " (default %(default)s)")
    p.add_argument("--models", nargs="+", default=list(d.models), metavar="MODEL",
                   help=f"from {', '.join(library_facts.model_names())} (default %(default)s)")
    p.add_argument("--seeds", nargs="+", type=int, metavar="SEED", default=list(d.seeds),
                   help="one model per seed (default %(default)s)")
    p.add_argument("--train-size", type=positive, metavar="N", default=d.train_size,
                   help="training examples (default %(default)s)")
    p.add_argument("--test-size", type=positive, metavar="N", default=d.test_size, help="test examples (default %(default)s)")
    p.add_argument("--full-size", action="store_true", help="use the registered sizes (Chopsticks 90000 / 10000)")
    add_interventional_option(p, d.interventional_points)
    add_training_options(p, d)
    p.add_argument("--out", type=Path, default=Path(d.out), metavar="DIR", help="run folder (default %(default)s)")
    add_common(p)
