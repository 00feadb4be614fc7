"""The Boxhead study of Chen et al. (2022), section 5 and Fig. 2-3: single-layer against
ladder VAEs on micro- and macro-level disentanglement.

Every run trains one model on one Boxhead variant under the paper's protocol
(:mod:`hier_models.protocols`: 12 latents, the small or large networks of appendix
B.2, the single-layer KL weight annealed down from 200 to beta over 10,000 steps, the
ladders' top layer from 150 over 5,000, their lower layers faded in over 5,000 steps
each with no KL term before (appendix A), the timetable shrunk by one factor for a
run shorter than 25,000 steps; Adamax at 3e-4 on batches of 32, as in the authors'
code), encodes the evaluation split and scores it:

- ``dci_macro_disentanglement`` / ``dci_micro_disentanglement``: the split DCI of
  :func:`hier_metrics.dci_split` with ``code_assignment="argmax"`` (each code goes to
  the group of its largest importance, as the authors computed it) on the dataset's
  macro group (floor, wall and cube hue, azimuth, scale) and micro group (the four
  micro-level hues); the same numbers as ``hierbench evaluate`` on Boxhead;
- ``elbo``: the evidence lower bound per image in nats, ``-(reconstruction + KL)`` at
  weight 1 on the evaluation split (for pro-LVAE the KL of each layer against its
  conditional prior, at one sample of the layers above).

The data are the registered splits as the TFDS builder draws them (the factors of
:func:`hier_datasets.generation.split_factors`, images rendered by
``hier_datasets.ground_truth``'s worker processes: Mesa and TensorFlow never share a
process), cut to ``--train-size`` / ``--eval-size``.

Records go to ``docs/results/chen2022.json`` (one per run, appended as it ends; a
rerun skips the runs it holds, so the study resumes) and the page
``docs/results/chen2022.md`` with the paper's box plots. On a GPU, training runs in
mixed precision (bfloat16 hidden layers, float32 codes and losses) with XLA.

    python -m benchmarks.chen2022 --measure-throughput --capacities small
    python -m benchmarks.chen2022 --betas 1 5 --capacities small --seeds 0 --minutes 20
    python -m benchmarks.chen2022                      # the paper's 480 runs (GPUs)
"""
from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

import hier_datasets
import hier_metrics
import hier_models
from benchmarks.study import NOTES_MARK, RESULTS, kept_notes, load_records, mean_std, write_records
from hier_datasets.generation import split_factors
from hier_datasets.hierarchy import Hierarchy
from hier_models import protocols
from hier_models.architectures import CAPACITIES
from hier_models.progress import FitProgress
from hier_models.recipes import factor_groups
from hier_models.registry import LADDERS
from hier_models.training import training_dataset

DATASETS = ("boxhead/boxhead1", "boxhead/boxhead2", "boxhead/boxhead3")
MODELS = protocols.STUDY_MODELS
BETAS = (1.0, 5.0, 10.0, 20.0)
SEEDS = (0, 1, 2, 3, 4)
LABELS = {"VAE": "beta-VAE", "BetaTCVAE": "beta-TCVAE", "ProVLAE": "pro-VLAE", "ProLVAE": "pro-LVAE"}
KEY = ("dataset", "model", "beta", "capacity", "seed", "steps", "train_size", "eval_size", "batch_size")


# ------------------------------------------------------------------ records
def key(record: dict) -> tuple:
    return tuple(record[k] for k in KEY)


def throughput_path(out: Path) -> Path:
    return out.with_name(out.stem + "_throughput.json")


# ---------------------------------------------------------------- machinery
def device() -> str:
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
        return f"GPU ({details.get('device_name', 'unknown')})"
    return f"CPU ({os.cpu_count()} cores, {platform.processor() or platform.machine()})"


def set_precision(choice: str) -> str:
    """The Keras dtype policy of ``choice`` (auto: mixed bfloat16 on a GPU, float32 on a CPU)."""
    import keras

    if choice == "auto":
        choice = "mixed_bfloat16" if device().startswith("GPU") else "float32"
    keras.mixed_precision.set_global_policy(choice)
    return choice


class Data:
    """The splits of the Boxhead variants, one variant in memory at a time."""

    def __init__(self, train_size: int, eval_size: int, workers: int | None):
        self.train_size, self.eval_size, self.workers = train_size, eval_size, workers
        self._name, self._splits = None, None

    def __call__(self, name: str):
        """``(train_images, eval_images, eval_factors, ground_truth)`` of ``name``."""
        if name != self._name:
            self._splits = None  # free the previous variant first
            gt = hier_datasets.ground_truth(name, **({"workers": self.workers} if self.workers else {}))
            family, _, config = name.partition("/")
            parts = []
            for split, size in (("train", self.train_size), ("test", self.eval_size)):
                factors = split_factors(gt, family, config, split, size)
                start = time.perf_counter()
                images = gt.observations_from_factors(factors, np.random.default_rng(0))
                print(f"rendered {size} {name} {split} images in {time.perf_counter() - start:.0f} s", flush=True)
                parts.append((factors, images))
            self._name = name
            self._splits = (parts[0][1], parts[1][1], parts[1][0], gt)
        return self._splits


def build_model(model: str, beta: float, capacity: str, seed: int, steps: int, train_size: int):
    """``model`` under the paper's protocol (:func:`hier_models.protocols.boxhead_protocol`)."""
    cls = hier_models.MODELS[model]
    options = protocols.boxhead_protocol(model, {"capacity": capacity}, latent_dim=None, training_steps=steps)
    if model == "BetaTCVAE":
        options["dataset_size"] = train_size
    return cls((64, 64, 3), beta=float(beta), random_state=seed, **options)


def protocol_fields(model) -> dict:
    """The annealing of a trained model, for its record: the KL weight at step 0
    (``beta_start``), the steps of its annealing, and a ladder's ``gamma``."""
    fields = {"beta_start": model.beta_start, "beta_anneal_steps": model.beta_anneal_steps}
    if model.__class__.__name__ in LADDERS:
        fields["gamma"] = model.gamma
    return fields


def _dataset(images: np.ndarray, batch_size: int, seed: int, repeat: bool):
    ds = training_dataset(images, None, batch_size, seed, shuffle=repeat, scale=1 / 255)
    return ds.repeat() if repeat else ds


def train(model_name, beta, capacity, seed, steps, train_images, *, batch_size, progress=True, desc=""):
    """A model trained for ``steps`` steps; returns it and the training seconds."""
    import keras

    keras.utils.set_random_seed(seed)
    model = build_model(model_name, beta, capacity, seed, steps, len(train_images))
    model.compile(optimizer=protocols.boxhead_optimizer())
    data = _dataset(train_images, batch_size, seed, repeat=True)
    start = time.perf_counter()
    model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0,
              callbacks=[FitProgress([desc or model_name], enabled=progress, unit="step")])
    return model, time.perf_counter() - start


def evaluate(model, eval_images, eval_factors, gt, batch_size: int) -> dict:
    """Split DCI (argmax assignment) of the posterior means, and the ELBO."""
    codes = model.encode(_dataset(eval_images, 256, 0, repeat=False))
    hierarchy = gt.hierarchy if isinstance(gt.hierarchy, Hierarchy) else Hierarchy.from_json(gt.hierarchy)
    scores = hier_metrics.evaluate_arrays(
        np.asarray(eval_factors, np.float64), codes, categorical=hierarchy, factor_groups=factor_groups(gt),
        factor_names=list(gt.factor_names), metrics=["dci_split"],
        metric_options={"dci_split": {"code_assignment": "argmax"}}, random_state=0,
    )
    terms = model.evaluate(_dataset(eval_images, batch_size, 0, repeat=False), verbose=0, return_dict=True)
    out = {k: float(v) for k, v in scores.items() if isinstance(v, (int, float)) and not k.endswith("codes")}
    out.update(reconstruction=float(terms["reconstruction"]), kl=float(terms["kl"]),
               elbo=-float(terms["reconstruction"] + terms["kl"]), dead_codes=int(np.sum(codes.std(axis=0) < 1e-3)))
    return out


# --------------------------------------------------------------- throughput
def _timed_fit(model, data, steps: int) -> float:
    start = time.perf_counter()
    model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
    return time.perf_counter() - start


def measure_throughput(args) -> list[dict]:
    """Steps per second of each model and capacity on Boxhead 1 images: after a
    warm-up that traces the step, the faster of two windows of ``--throughput-steps``."""
    import gc

    import keras

    precision = set_precision(args.precision)
    gt = hier_datasets.ground_truth("boxhead/boxhead1")
    images = gt.observations_from_factors(split_factors(gt, "boxhead", "boxhead1", "train", 4 * args.batch_size),
                                          np.random.default_rng(0))
    records = []
    for capacity in args.capacities:
        for model_name in args.models:
            warmup, timed = args.throughput_warmup, args.throughput_steps
            model = build_model(model_name, 1.0, capacity, 0, warmup + 2 * timed, len(images))
            model.compile(optimizer=protocols.boxhead_optimizer())
            data = _dataset(images, args.batch_size, 0, repeat=True)
            with warnings.catch_warnings():  # the schedules end after the warm-up, as planned
                warnings.simplefilter("ignore", UserWarning)
                model.fit(data, epochs=1, steps_per_epoch=warmup, verbose=0)  # traces the step
            seconds = min(_timed_fit(model, data, timed) for _ in range(2))  # best of two windows
            record = dict(model=model_name, capacity=capacity, batch_size=args.batch_size, precision=precision,
                          device=device(), parameters=int(model.count_params()), steps=timed,
                          seconds=round(seconds, 3), steps_per_second=round(timed / seconds, 4),
                          load=round(os.getloadavg()[0], 2))
            print(f"{LABELS[model_name]} {capacity}: {record['steps_per_second']:.3f} steps/s "
                  f"({record['parameters'] / 1e6:.1f}M parameters)", flush=True)
            records.append(record)
            del model
            keras.backend.clear_session()
            gc.collect()
    return records


def rate_key(record: dict) -> tuple:
    """What a measured throughput depends on: model, capacity, batch, precision, device."""
    return record["model"], record["capacity"], record["batch_size"], record["precision"], record["device"]


def steps_for(args, model: str, capacity: str, precision: str) -> int:
    """``--steps``, or the steps of ``--minutes`` at the throughput measured for this
    model, capacity, batch size, precision and device."""
    if args.steps:
        return args.steps
    wanted = rate_key(dict(model=model, capacity=capacity, batch_size=args.batch_size, precision=precision,
                           device=device()))
    rates = [r for r in load_records(throughput_path(args.output)) if rate_key(r) == wanted]
    if not rates:
        raise SystemExit(f"no throughput of {model} ({capacity}, batch {args.batch_size}, {precision}) on {device()}: "
                         "run --measure-throughput with the same options first, or give --steps")
    return max(1, int(args.minutes * 60 * rates[-1]["steps_per_second"]))


# ---------------------------------------------------------------------- page
def _label(model: str, capacity: str, capacities) -> str:
    return LABELS[model] + (f"\n{capacity}" if len(capacities) > 1 else "")


def box_plots(records: list[dict], metrics: dict, path: Path) -> bool:
    """One panel per metric and variant, one box per model (and capacity), across betas and seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = [d for d in DATASETS if any(r["dataset"] == d for r in records)]
    if not datasets:
        return False
    capacities = [c for c in CAPACITIES if any(r["capacity"] == c for r in records)]
    groups = [(m, c) for c in capacities for m in MODELS if any(r["model"] == m and r["capacity"] == c
                                                                 for r in records)]
    fig, axes = plt.subplots(len(metrics), len(datasets), figsize=(3.2 * len(datasets) + 0.5, 3.0 * len(metrics)),
                             squeeze=False, sharey="row")
    for row, (metric, title) in enumerate(metrics.items()):
        for col, name in enumerate(datasets):
            ax = axes[row][col]
            values = [[r[metric] for r in records if r["dataset"] == name and r["model"] == m and r["capacity"] == c]
                      for m, c in groups]
            ax.boxplot([v if v else [np.nan] for v in values], flierprops={"marker": "D", "markersize": 4})
            ax.set_xticks(range(1, len(groups) + 1), [_label(m, c, capacities) for m, c in groups], fontsize=7,
                          rotation=30)
            ax.set_title(f"{name.split('/')[1]}: {title}", fontsize=9)
            ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def results_table(records: list[dict]) -> list[str]:
    lines = ["| dataset | model | capacity | beta | runs | steps | DCI macro | DCI micro | ELBO (nats) | dead codes |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    seen = sorted({(r["dataset"], MODELS.index(r["model"]), r["capacity"], r["beta"]) for r in records})
    for dataset, m, capacity, beta in seen:
        rows = [r for r in records if (r["dataset"], r["model"], r["capacity"], r["beta"]) ==
                (dataset, MODELS[m], capacity, beta)]
        steps = sorted({r["steps"] for r in rows})
        lines.append(
            f"| {dataset.split('/')[1]} | {LABELS[MODELS[m]]} | {capacity} | {beta:g} | {len(rows)} | "
            f"{', '.join(map(str, steps))} | {mean_std([r['dci_macro_disentanglement'] for r in rows])} | "
            f"{mean_std([r['dci_micro_disentanglement'] for r in rows])} | {mean_std([r['elbo'] for r in rows])} | "
            f"{mean_std([r['dead_codes'] for r in rows])} |")
    return lines


def ladders_versus_single(records: list[dict]) -> list[str]:
    """Per variant: mean DCI of the ladders and of the single-layer models that trained for
    the same number of steps; runs of unequal length are not compared. Without such a
    pair, one line saying how long each kind trained."""
    lines = ["| dataset | steps | runs | macro: ladders / single-layer | micro: ladders / single-layer |",
             "|---|---:|---:|---:|---:|"]
    for name in DATASETS:
        rows = [r for r in records if r["dataset"] == name]
        for steps in sorted({r["steps"] for r in rows}):
            same = [r for r in rows if r["steps"] == steps]
            cells = []
            for metric in ("dci_macro_disentanglement", "dci_micro_disentanglement"):
                ladder = [r[metric] for r in same if r["model"] in LADDERS]
                single = [r[metric] for r in same if r["model"] not in LADDERS]
                if ladder and single:
                    cells.append(f"{np.mean(ladder):.3f} / {np.mean(single):.3f}")
            if cells:
                lines.append(f"| {name.split('/')[1]} | {steps:,} | {len(same)} | {cells[0]} | {cells[1]} |")
    if len(lines) > 2:
        return lines
    ladder = sorted({r["steps"] for r in records if r["model"] in LADDERS})
    single = sorted({r["steps"] for r in records if r["model"] not in LADDERS})
    return [f"No ladder has trained for as many steps as a single-layer model (ladders: "
            f"{', '.join(f'{n:,}' for n in ladder) or 'none'} steps; single-layer models: "
            f"{', '.join(f'{n:,}' for n in single) or 'none'}), so none is compared here; the paper's "
            "comparison is at equal steps."]


def throughput_table(rates: list[dict]) -> list[str]:
    lines = ["| model | capacity | parameters | batch | precision | device | steps/s | images/s | 1-min load |",
             "|---|---|---:|---:|---|---|---:|---:|---:|"]
    for r in rates:
        lines.append(f"| {LABELS[r['model']]} | {r['capacity']} | {r['parameters'] / 1e6:.1f}M | {r['batch_size']} | "
                     f"{r['precision']} | {r['device']} | {r['steps_per_second']:.3f} | "
                     f"{r['steps_per_second'] * r['batch_size']:.1f} | {r['load']} |")
    return lines


def render(out: Path) -> None:
    records = load_records(out)
    rates = load_records(throughput_path(out))
    page = out.with_suffix(".md")
    notes = kept_notes(page, "")
    lines = [
        "# Chen et al. (2022), the Boxhead study: Fig. 2 and 3",
        "",
        f"`python -m benchmarks.chen2022` (resumes; `--help` for the options); records in `{out.name}`.",
        "beta-VAE, beta-TCVAE, pro-VLAE and pro-LVAE under the paper's protocol (section 5, appendix B):",
        "12 latents (ladders 3 x 4), the small / large networks of tables 1-4, the single-layer KL weight",
        "annealed down from 200 to beta over 10,000 steps, the ladders' top layer from 150 over 5,000 and",
        "their lower layers faded in over 5,000 steps each, without a KL term before (appendix A); all",
        "shrunk by one factor to end by 60% of a shorter run; Adamax 3e-4, batch 32 (the authors' code).",
        "DCI: the split DCI with each code assigned to the group of its largest",
        "importance (the authors' computation) on the evaluation split; ELBO per image in nats.",
        "",
        "The paper (480 models, 200,000 steps each in the authors' code): the ladders above the",
        "single-layer models on both macro- and micro-level disentanglement on every variant, and a",
        "higher ELBO; micro-level disentanglement higher on the less correlated variants.",
        "",
    ]
    if rates:
        lines += ["## Throughput", "", "`--measure-throughput`: training steps per second after a warm-up.", "",
                  *throughput_table(rates), ""]
    if records:
        lines += ["## Ladders against single-layer models at equal steps (mean DCI disentanglement)", "",
                  *ladders_versus_single(records), ""]
        fig = out.with_name(out.stem + "_dci.png")
        if box_plots(records, {"dci_macro_disentanglement": "macro DCI", "dci_micro_disentanglement": "micro DCI"},
                     fig):
            lines += ["## Fig. 2: macro- and micro-level DCI disentanglement", "",
                      "Each box: every beta and seed of one model (and capacity) on one variant.", "",
                      f"![DCI per model and variant]({fig.name})", ""]
        fig = out.with_name(out.stem + "_elbo.png")
        if box_plots(records, {"elbo": "ELBO (nats)"}, fig):
            lines += ["## Fig. 3: ELBO", "", f"![ELBO per model and variant]({fig.name})", ""]
        lines += ["## Every configuration", "", *results_table(records), ""]
    lines += [NOTES_MARK]
    page.write_text("\n".join(lines) + (notes if notes else "\n"))


# ---------------------------------------------------------------------- main
def plan(args) -> list[tuple]:
    return [(d, m, float(b), c, s) for d in args.datasets for c in args.capacities for b in args.betas
            for s in args.seeds for m in args.models]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--betas", nargs="+", type=float, default=list(BETAS))
    parser.add_argument("--capacities", nargs="+", default=list(CAPACITIES), choices=list(CAPACITIES))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, default=None, help="training steps of every run")
    length.add_argument("--minutes", type=float, default=None,
                        help="training time of every run, turned into steps with the measured throughput")
    parser.add_argument("--train-size", type=int, default=100_000, help="training images (default: the registered 100,000)")
    parser.add_argument("--eval-size", type=int, default=10_000, help="evaluation images (default 10,000, as the paper)")
    parser.add_argument("--batch-size", type=int, default=protocols.BATCH_SIZE)
    parser.add_argument("--precision", default="auto", choices=("auto", "float32", "mixed_float16", "mixed_bfloat16"),
                        help="Keras dtype policy (auto: mixed_bfloat16 on a GPU, float32 on a CPU)")
    parser.add_argument("--workers", type=int, default=None, help="rendering processes (default: the generator's)")
    parser.add_argument("--output", type=Path, default=RESULTS / "chen2022.json",
                        help="records (the page and figures go beside it)")
    parser.add_argument("--measure-throughput", action="store_true",
                        help="measure steps/s of each model and capacity, write them into the page, and stop")
    parser.add_argument("--throughput-steps", type=int, default=20)
    parser.add_argument("--throughput-warmup", type=int, default=3)
    parser.add_argument("--render", action="store_true", help="only redraw the page from the records")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    for name in ("steps", "minutes", "train_size", "eval_size", "batch_size"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {value}")
    if args.render:
        render(args.output)
        return
    if args.measure_throughput:
        rates = measure_throughput(args)
        path = throughput_path(args.output)
        old = [r for r in load_records(path) if rate_key(r) not in {rate_key(n) for n in rates}]
        write_records(path, old + rates)
        render(args.output)
        return
    if args.steps is None and args.minutes is None:
        parser.error("give --steps or --minutes (the paper's runs: --steps 200000)")
    from tqdm import tqdm

    precision = set_precision(args.precision)
    data = Data(args.train_size, args.eval_size, args.workers)
    units = plan(args)
    done = {key(r) for r in load_records(args.output)}
    for dataset, model_name, beta, capacity, seed in tqdm(units, desc="study", unit="run", disable=args.quiet):
        steps = steps_for(args, model_name, capacity, precision)
        probe = dict(dataset=dataset, model=model_name, beta=beta, capacity=capacity, seed=seed, steps=steps,
                     train_size=args.train_size, eval_size=args.eval_size, batch_size=args.batch_size)
        if key(probe) in done:
            continue
        train_images, eval_images, eval_factors, gt = data(dataset)
        desc = f"{LABELS[model_name]} {capacity} beta {beta:g} seed {seed} {dataset.split('/')[1]}"
        model, seconds = train(model_name, beta, capacity, seed, steps, train_images, batch_size=args.batch_size,
                               progress=not args.quiet, desc=desc)
        record = {**probe, **evaluate(model, eval_images, eval_factors, gt, args.batch_size),
                  **protocol_fields(model), "train_seconds": round(seconds, 1), "steps_per_second": round(steps / seconds, 4),
                  "precision": precision, "device": device(), "minutes_budget": args.minutes}
        write_records(args.output, load_records(args.output) + [record])
        done.add(key(record))
        render(args.output)
        tqdm.write(f"{desc}: DCI macro {record['dci_macro_disentanglement']:.3f}, micro "
                   f"{record['dci_micro_disentanglement']:.3f}, ELBO {record['elbo']:.1f} ({seconds:.0f} s)")
        del model
        import keras

        keras.backend.clear_session()
    render(args.output)


if __name__ == "__main__":
    main()
