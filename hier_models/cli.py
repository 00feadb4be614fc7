"""The ``hierbench`` command line.

    hierbench build chopsticks/depth2_either spaceshapes
    hierbench train --dataset chopsticks/depth2_either_20000_5000 --model BetaTCVAE --out runs/btc
    hierbench evaluate --model runs/btc --out runs/btc/test.json
    hierbench evaluate --codes codes.npy --dataset chopsticks/depth2_either --split test
    hierbench run                    # the embedded default benchmark, report in runs/default
    hierbench run --grid             # the same, COFHAE selected over the paper's 27-run grid
    hierbench report runs/default    # redraw a run's report from its saved artefacts

This module only parses arguments and prints; the work is done by
:mod:`hier_models.runs` (datasets, training, scoring, runs) and
:mod:`hier_models.report` (figures and report files).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

from hier_models import report, runs

DATASET_HELP = (
    "dataset as for tfds.load: chopsticks/depth{2,3}_{slope,inter,both,either}, spaceshapes, "
    "boxhead/boxhead{1,2,3}; append _TRAIN_TEST (e.g. chopsticks/depth2_either_20000_5000) for a resized "
    "config of the same process, built on first use"
)
CODES_ORDER = """\
rows of --codes: one per example of the chosen split, in the order in which TFDS
reads it without shuffling. After `hierbench build NAME` (or any command that
builds NAME), this gives that order:

    import hier_datasets, tensorflow_datasets as tfds
    ds = tfds.load(NAME, split=SPLIT, shuffle_files=False)   # e.g. "test", "test[:1000]"
    codes = np.concatenate([my_encoder(b["series"]) for b in tfds.as_numpy(ds.batch(1024))])
    np.save("codes.npy", codes)                              # (num_examples, num_codes)

(`image` instead of `series` for Spaceshapes and Boxhead; pass data_dir= when
--data-dir is used.) Codes are scored as one flat group of always-active
dimensions, or in the flat layout of --code-hierarchy (a Hierarchy JSON file:
categorical columns hold option indices)."""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _hyperparameter_help() -> str:
    lines = ["hyperparameters (--set KEY=VALUE; VALUE is read as JSON, else as text):"]
    for model in runs.MODEL_NAMES:
        names = ", ".join(sorted(runs.model_parameters(model)))
        lines += textwrap.wrap(f"{model}: {names}", width=88, initial_indent="  ", subsequent_indent="      ")
    text = (
        "COFHAE is the whole method: a Softplus autoencoder with initial_dim codes (default per dataset, as "
        "in the paper) trained for --autoencoder-epochs, MIMOSA on its codes (hyperparameters "
        f"{', '.join(runs.MIMOSA_OPTIONS)}), then COFHAE on the learned hierarchy. Every model trains with "
        "Adam at 1e-3, divided by 10 at half and by 100 at three quarters of the steps (the paper's schedule). "
        "COFHAE trains once with tau=1, lambda_assign=100, lambda_tc=10 (the authors' code's defaults, the middle "
        "of the paper's grid for both penalties); --grid trains the paper's 27 configurations instead."
    )
    return "\n".join(lines) + "\n\n" + textwrap.fill(text, width=88)


# ----------------------------------------------------------------------- commands
def _build(args) -> int:
    from hier_datasets import summary

    datasets = [runs.resolve_dataset(name) for name in args.names]
    for dataset in datasets:
        builder = runs.prepare(dataset, args.data_dir)
        rows = summary.path_table(builder)
        splits = builder.info.splits
        print(f"\n{dataset.name}: {splits['train'].num_examples} train / {splits['test'].num_examples} test, {len(rows)} paths")
        print(summary.format_table(rows))
    return 0


def _train(args) -> int:
    dataset = runs.resolve_dataset(args.dataset)
    model = runs.resolve_model(args.model)
    options = runs.parse_options(args.set, [model])[model]
    runs.check_grid(model, runs.PAPER_GRID if args.grid else None, options)
    if model == runs.HIERARCHICAL:
        runs.initial_dim(dataset, options)
    out = runs.check_writable(args.out)
    data = runs.load_split(runs.prepare(dataset, args.data_dir), dataset, args.split, show_progress=not args.quiet)
    trained = runs.train(model, data, epochs=args.epochs, autoencoder_epochs=args.autoencoder_epochs,
                         batch_size=args.batch_size, seed=args.seed, latent_dim=args.latent_dim, options=options,
                         show_progress=not args.quiet, grid=runs.PAPER_GRID if args.grid else None)
    written = runs.save_training(trained, out)
    print(f"{model} trained on {len(data)} examples of {dataset.name} in {trained.seconds:.0f} s")
    if "grid" in trained.settings:
        print(f"grid of {len(trained.settings['grid'])} COFHAE runs; selected {trained.settings['selected']}")
    for stage, history in trained.history.items():
        epochs = max((len(v) for v in history.values()), default=0)
        print(f"  {stage} after {epochs} epochs: " + ", ".join(f"{k} {v[-1]:.4g}" for k, v in history.items() if v))
    if trained.hierarchy is not None:
        scores = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in trained.mimosa_scores.items())
        print(f"MIMOSA hierarchy ({scores}):\n{trained.hierarchy}")
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _evaluate(args) -> int:
    result = runs.evaluate(
        args.dataset, args.split, model_path=args.model, codes_path=args.codes, hierarchy_path=args.code_hierarchy,
        out=args.out, data_dir=args.data_dir, seed=args.seed, interventional_points=args.interventional_points,
        show_progress=not args.quiet,
    )
    if args.out is None:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(report.metrics_table({Path(result["representation"]).name: result}))
        print(f"wrote {args.out}")
    return 0


def _report(args) -> int:
    metrics = runs.report_run(args.run_dir, show_progress=not args.quiet)
    print(report.metrics_table(metrics))
    print(f"report: {Path(args.run_dir) / 'report.html'}")
    return 0


def _run(args) -> int:
    models = [runs.resolve_model(m) for m in args.models]
    settings = runs.RunSettings(
        datasets=args.datasets, models=models, seeds=args.seeds,
        train_size=None if args.full_size else args.train_size, test_size=None if args.full_size else args.test_size,
        epochs=args.epochs, autoencoder_epochs=args.autoencoder_epochs, batch_size=args.batch_size,
        interventional_points=args.interventional_points, options=runs.parse_options(args.set, models),
        data_dir=args.data_dir, out=args.out, grid=args.grid,
    )
    metrics, seconds = runs.run(settings, show_progress=not args.quiet)
    print()
    print(report.metrics_table(metrics))
    print(f"\nreport: {Path(args.out) / 'report.html'} (summary.md, metrics.json and the figures beside it); "
          f"{seconds:.0f} s in all")
    return 0


# ------------------------------------------------------------------------- parser
def _common(p, *, data_dir=True, quiet=True):
    if data_dir:
        p.add_argument("--data-dir", default=None, metavar="DIR", help="TFDS data dir (default: TFDS's own, ~/tensorflow_datasets)")
    if quiet:
        p.add_argument("--quiet", action="store_true", help="no progress bars")


def _training_options(p, defaults: runs.RunSettings):
    p.add_argument("--epochs", type=_positive, metavar="N", default=defaults.epochs, help="training epochs of each model (default %(default)s)")
    p.add_argument("--autoencoder-epochs", type=_positive, default=runs.AUTOENCODER_EPOCHS, metavar="N",
                   help="epochs of COFHAE's smooth autoencoder, before MIMOSA (default %(default)s: it is cheap, "
                        "and MIMOSA needs converged codes)")
    p.add_argument("--batch-size", type=_positive, metavar="N", default=defaults.batch_size, help="batch size (default %(default)s)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a model hyperparameter, repeatable; see the list below")
    p.add_argument("--grid", action="store_true",
                   help="COFHAE: train the paper's 27 configurations (tau 0.5/0.67/1, lambda_assign 10/100/1000, "
                        "lambda_tc 1/10/100) on one MIMOSA result and keep the run with the lowest training "
                        "reconstruction among the third with the lowest assignment loss (27x COFHAE's training "
                        "time); without it, one run with the defaults")


def _wrap(text: str) -> str:
    return "\n\n".join(textwrap.fill(par, width=88) for par in text.split("\n\n"))


def _command(sub, name: str, func, *, summary: str, description: str, epilog: str = ""):
    p = sub.add_parser(name, help=summary, description=_wrap(description), epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    return p


def _interventional_option(p, default: int):
    p.add_argument("--interventional-points", type=_non_negative, default=default, metavar="N",
                   help="training votes of the FactorVAE / beta-VAE scores, half as many for evaluation; "
                        "0 skips them (default %(default)s; disentanglement_lib uses 10000)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hierbench",
        description="Hierarchical disentanglement benchmarks: build datasets, train models, score them, report.",
        epilog="`hierbench run` with no arguments runs the default benchmark; `hierbench COMMAND --help` for more.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = runs.DEFAULT_RUN

    build = _command(
        sub, "build", _build, summary="build (or reuse) datasets and summarise them per path",
        description="Build (or reuse) registered datasets in the TFDS data dir and print how many examples take "
                    "each path of the hierarchy.",
        epilog="example: hierbench build chopsticks/depth2_either spaceshapes",
    )
    build.add_argument("names", nargs="+", metavar="NAME", help=DATASET_HELP)
    _common(build, quiet=False)

    train = _command(
        sub, "train", _train, summary="train one model and save it (.keras) with its training history",
        description="Train one model on the train split of a dataset and save it to --out: model.keras and "
                    "history.json (settings, per-epoch losses; for COFHAE also MIMOSA's purity, coverage and "
                    "H-error on the training data), and for COFHAE smooth_autoencoder.keras, hierarchy.json, "
                    "assignments.npy and initial_codes.npy.",
        epilog=_hyperparameter_help() + "\n\nexample: hierbench train --dataset chopsticks/depth2_either_20000_5000 "
               "--model BetaTCVAE --set beta=4 --out runs/btc",
    )
    train.add_argument("--dataset", required=True, metavar="NAME", help=DATASET_HELP)
    train.add_argument("--model", required=True, metavar="MODEL", help=f"one of {', '.join(runs.MODEL_NAMES)}")
    train.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder for the saved model (created if missing)")
    train.add_argument("--split", default="train", metavar="SPLIT", help="split to train on (default %(default)s; TFDS slices work)")
    train.add_argument("--seed", type=int, default=0, metavar="N", help="seed of initialisation, shuffling and noise (default 0)")
    train.add_argument("--latent-dim", type=_positive, default=None, metavar="N",
                       help="number of codes of a flat model (default: the dataset's number of factors)")
    _training_options(train, d)
    _common(train)

    evaluate = _command(
        sub, "evaluate", _evaluate, summary="score a saved model or external codes with every applicable metric (JSON)",
        description="Score a saved model, or codes from any framework, against a split of a dataset: R4, R4c, DCI, "
                    "MIG, SAP, H-error and path purity on the split; for a model also the FactorVAE and beta-VAE "
                    "scores on fresh samples of the generative process. Prints JSON, or writes it to --out.",
        epilog=CODES_ORDER + "\n\nexamples:\n  hierbench evaluate --model runs/btc\n"
               "  hierbench evaluate --codes codes.npy --dataset chopsticks/depth2_either --split test --out scores.json",
    )
    what = evaluate.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", type=Path, metavar="PATH", help="a .keras file, or a folder written by hierbench train")
    what.add_argument("--codes", type=Path, metavar="FILE.npy", help="(num_examples, num_codes) array, rows in split order (below)")
    evaluate.add_argument("--dataset", metavar="NAME", help=DATASET_HELP + "; default for --model: the one it was trained on")
    evaluate.add_argument("--split", default="test", metavar="SPLIT", help="split to score on (default %(default)s; TFDS slices work)")
    evaluate.add_argument("--code-hierarchy", type=Path, metavar="FILE.json", help="Hierarchy JSON of --codes' layout")
    evaluate.add_argument("--out", type=Path, metavar="FILE.json", help="write the JSON here (default: print it)")
    evaluate.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the metrics' splits and samples (default 0)")
    _interventional_option(evaluate, d.interventional_points)
    _common(evaluate)

    rep = _command(
        sub, "report", _report, summary="(re)draw the report of a run folder",
        description="Redraw a run's report from the artefacts saved in RUN_DIR (models, codes, metrics, data "
                    "labels): metrics.json, summary.md, report.html (self-contained) and the figures as PNG.",
        epilog="example: hierbench report runs/default",
    )
    rep.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by hierbench run")
    _common(rep, data_dir=False)

    run = _command(
        sub, "run", _run, summary="build, train, score and report: the default benchmark without arguments",
        description="The main job: build (or reuse) each dataset, train each model with each seed, score it with "
                    "every applicable metric, and write a report folder: metrics.json, summary.md with a models x "
                    "metrics table, a self-contained report.html, and the figures (factor-vs-code histograms where "
                    "both are active with per-factor R4c, latent traversals, the learned hierarchy beside the true "
                    "one with per-path purity, MIMOSA's components coloured by true path)."
                    f"\n\nWithout arguments: {d.describe()}; about 5 minutes on 2 CPU cores.",
        epilog=_hyperparameter_help() + "\n\nA plain --set KEY=VALUE goes to every model that takes KEY; "
               "MODEL.KEY=VALUE to one.\n\nexample: hierbench run --models AE VAE COFHAE --seeds 0 1 "
               "--set VAE.beta=4 --out runs/vae",
    )
    run.add_argument("--datasets", nargs="+", default=list(d.datasets), metavar="NAME",
                     help=DATASET_HELP + " (default %(default)s)")
    run.add_argument("--models", nargs="+", default=list(d.models), metavar="MODEL",
                     help=f"from {', '.join(runs.MODEL_NAMES)} (default %(default)s)")
    run.add_argument("--seeds", nargs="+", type=int, metavar="SEED", default=list(d.seeds), help="one model per seed (default %(default)s)")
    run.add_argument("--train-size", type=_positive, metavar="N", default=d.train_size, help="training examples (default %(default)s)")
    run.add_argument("--test-size", type=_positive, metavar="N", default=d.test_size, help="test examples (default %(default)s)")
    run.add_argument("--full-size", action="store_true", help="use the registered sizes (Chopsticks 90000 / 10000)")
    _interventional_option(run, d.interventional_points)
    _training_options(run, d)
    run.add_argument("--out", type=Path, default=Path(d.out), metavar="DIR", help="run folder (default %(default)s)")
    _common(run)
    return p


def _quiet_libraries() -> None:
    """Keep TensorFlow's and TFDS's informational messages off the terminal."""
    import absl.logging
    import tensorflow as tf

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    absl.logging.set_verbosity(absl.logging.ERROR)
    tf.get_logger().setLevel("ERROR")


def main(argv=None) -> int:
    _quiet_libraries()
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except runs.CommandError as err:
        message = str(err)
    except ValueError as err:
        message = f"{err} (see hierbench {args.command} --help)"
    except OSError as err:
        where = f" ({err.filename})" if err.filename else ""
        message = f"{err.strerror or err}{where}; check the path and its permissions"
    except KeyboardInterrupt:
        print(f"hierbench {args.command}: interrupted", file=sys.stderr)
        return 130
    print(f"hierbench {args.command}: {' '.join(message.split())}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
