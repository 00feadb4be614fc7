"""The protocol of Ross & Doshi-Velez (2021): Table 1 (MIMOSA) and Fig. 3 (R4c per model).

The paper's protocol (section 7, appendix A): on each dataset, a Softplus smooth
autoencoder with ``initial_dim`` codes trained for 50 epochs on the training split,
MIMOSA on its codes (Table 1: purity, coverage, H-error over 5 restarts), COFHAE on
MIMOSA's hierarchy and assignments, and the flat baselines AE, beta-TCVAE (beta 5)
and FactorVAE (gamma 10), every model with the paper's schedule (Adam 1e-3, divided
by 10 at 50% and by 100 at 75% of the steps, batch 256) and scored with every metric
of ``hier_metrics`` on the test split (FactorVAE and beta-VAE scores with
disentanglement_lib's 10,000 / 5,000 votes on fresh samples).

The data are the registered datasets' splits (90,000 / 10,000 Chopsticks series,
54,000 / 6,000 Spaceshapes images), drawn from the same split seeds as the TFDS
builds, plus the four depth-3 Chopsticks configs with the authors' stopping rule
(``depth3_*_reference``, on which the paper's Table 1 was measured).

Every finished run is appended to ``docs/results/ross2021.json`` at once, and a
rerun skips the runs already there, so a killed study loses only the run in
progress; a ``COFHAE-SH`` run (hours on Spaceshapes) checkpoints each configuration
as it finishes a rung (``<stem>.COFHAE-SH-<setting>.halving/`` in the cache), so it
resumes at the configuration it was on, and the smooth autoencoder and the baselines
save their state at each epoch's end (``<stem>.autoencoder.backup/``,
``<stem>.<model>.keras.backup/``), so they resume at the epoch they were on, to the
same weights as an unbroken run (:class:`hier_models.training.ResumableFit`); a
baseline keeps its backup through scoring, so a run stopped there is scored again
without training again; a run's
``seconds`` add up every chunk. MIMOSA runs come first (all datasets and restarts),
then COFHAE and the baselines; the smooth autoencoder's codes and MIMOSA's output are cached under
``--cache`` so that COFHAE reuses the restart of the same seed, and every trained
model is kept there (``<dataset>-n<size>-e<epochs>-s<seed>.<model>.keras``) for
inspection after the study.

``--supersede REASON`` takes the records of the runs the other options name out of
the tables (into ``ross2021_superseded.json``, which the page lists with the reason)
and stops; the same command without it then trains those runs again. It moves records
only: a restart's cached smooth autoencoder and MIMOSA output stay in ``--cache``.

    python -m benchmarks.ross2021                        # the whole study, resuming
    python -m benchmarks.ross2021 --datasets chopsticks/depth3_either --models
    python -m benchmarks.ross2021 --render               # only redraw the page
    python -m benchmarks.ross2021 --models FactorVAE --model-seeds 0 1 2 3 4 --mimosa-seeds --pending
    python -m benchmarks.ross2021 --datasets spaceshapes --mimosa-seeds --models AE --model-seeds 0 \
        --supersede "trained before the weights were seeded"   # then the same without --supersede
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import inspect
import math
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import keras
import numpy as np

import hier_datasets
import hier_metrics
from benchmarks.study import (
    NOTES_MARK,
    RESULTS,
    append_record,
    kept_notes,
    load_records,
    machine,
    mean_std,
    mimosa_scores,
    supersede,
    superseded_path,
)
from hier_datasets.generation import split_seed
from hier_datasets.hierarchy import Hierarchy
from hier_models import AE, COFHAE, BetaTCVAE, FactorVAE, mimosa, paper_settings
from hier_models.hierarchical import PAPER_GRID, successive_halving, train_cofhae
from hier_models.progress import FitProgress
from hier_models.recipes import score
from hier_models.splits import SplitArrays
from hier_models.training import ResumableFit, fit_paper_schedule, training_dataset
from hierbench.files import save_keras

VARIANTS = ("inter", "slope", "both", "either")
PAPER_DATASETS = [f"chopsticks/depth{d}_{v}" for d in (2, 3) for v in VARIANTS] + ["spaceshapes"]
REFERENCE_DATASETS = [f"chopsticks/depth3_{v}_reference" for v in VARIANTS]
BASELINES = {"AE": (AE, {}), "BetaTCVAE": (BetaTCVAE, {"beta": 5.0}), "FactorVAE": (FactorVAE, {"gamma": 10.0})}
MODELS = ("COFHAE", *BASELINES)
#: COFHAE with ``decoder_assignments="straight_through"``: the decoder sees the hard
#: assignments that evaluation uses; run on request (``--models COFHAE-ST``), not by default
STRAIGHT_THROUGH = "COFHAE-ST"
#: each COFHAE the study trains, and its ``decoder_assignments``
COFHAE_VARIANTS = {"COFHAE": "soft", STRAIGHT_THROUGH: "straight_through"}
#: COFHAE chosen by the paper's selection protocol: the rule over the 27-point grid
#: (appendix A.1), run as successive halving (``hier_models.hierarchical.successive_halving``)
SELECTED = "COFHAE-SH"
#: the paper's TC discriminator (appendix A.1: 3 x 1000), COFHAE's default
PAPER_DISCRIMINATOR_UNITS = list(inspect.signature(COFHAE).parameters["discriminator_units"].default)


# ------------------------------------------------------------------ records
def key(record: dict) -> tuple:
    """What makes a run: a selected COFHAE also by its discriminator setting and rungs."""
    selection = tuple(map(str, (record.get("discriminator_units"), record.get("tc_rows"), record.get("rungs"))))
    return record["dataset"], record["model"], record["seed"], record["train_size"], record["epochs"], selection


# --------------------------------------------------------------------- data
def registered_sizes(name: str) -> tuple[int, int]:
    return (54_000, 6_000) if name == "spaceshapes" else (90_000, 10_000)


def split(name: str, which: str, size: int, noise: float = 0.0):
    """(factors, observations) of a split, drawn as the TFDS builder draws it; with
    ``noise``, the same factors observed through Gaussian observation noise of that
    standard deviation (Chopsticks' ``noise``)."""
    gt = hier_datasets.ground_truth(name, **({"noise": noise} if noise else {}))
    family, _, config = name.partition("/")
    rng = np.random.default_rng(split_seed(family, config or "default", which))
    factors = gt.sample_factors(size, rng)
    return factors, gt.observations_from_factors(factors, rng)


def cache_stem(cache: Path, name: str, train_size: int, epochs: int, seed: int) -> Path:
    """Where the runs of one dataset, training size, epochs and seed keep their files."""
    return Path(cache) / f"{name.replace('/', '-')}-n{train_size}-e{epochs}-s{seed}"


def kept_model(stem: Path, model: str) -> Path:
    """Where a trained model is kept for later inspection (``keras.models.load_model``)."""
    return stem.with_suffix(f".{model}.keras")


def assignments_id(assignments: np.ndarray) -> str:
    """A short fingerprint of MIMOSA's assignments: runs that share it trained on the same
    targets (a smooth autoencoder retrained on another machine may differ slightly)."""
    return hashlib.sha1(np.ascontiguousarray(assignments, dtype=np.int64).tobytes()).hexdigest()[:12]


def as_float(observations: np.ndarray) -> np.ndarray:
    """Model input: float32, images (0/1 for Spaceshapes) as they are."""
    return np.asarray(observations, dtype=np.float32)


# --------------------------------------------------------------------- runs
class Study:
    def __init__(self, args):
        self.args = args
        self.cache = Path(args.cache)
        self.cache.mkdir(parents=True, exist_ok=True)
        self._data: dict = {}
        self.discriminator_dtype = discriminator_dtype(args.discriminator_dtype)

    @classmethod
    def configured(cls, **settings) -> "Study":
        """A study with ``python -m benchmarks.ross2021``'s defaults, ``settings``
        (``cache=...``, ``epochs=...``, the options' names) overriding them: how the
        other studies build theirs."""
        args = build_parser().parse_args([])
        unknown = sorted(set(settings) - set(vars(args)))
        if unknown:
            raise TypeError(f"unknown study settings {unknown}; choose from {sorted(vars(args))}")
        vars(args).update(settings)
        return cls(args)

    def data(self, name: str):
        if name not in self._data:
            self._data = {}  # one dataset in memory at a time
            train, test = self.sizes(name)
            self._data[name] = (split(name, "train", train), split(name, "test", test))
        return self._data[name]

    def sizes(self, name: str) -> tuple[int, int]:
        train, test = registered_sizes(name)
        return self.args.train_size or train, self.args.test_size or test

    def common(self, name: str, model: str, seed: int) -> dict:
        """The fields every record of the study starts with: what ran, at which sizes, on
        which machine, and a selected COFHAE's discriminator setting and rungs."""
        common = {"dataset": name, "model": model, "seed": seed, "train_size": self.sizes(name)[0],
                  "test_size": self.sizes(name)[1], "epochs": self.args.epochs, "batch_size": self.args.batch_size,
                  "machine": machine()}
        if model == SELECTED:
            options = self.discriminator_options()
            common.update(discriminator_units=options["discriminator_units"],
                          tc_rows=options.get("tc_rows"), rungs=list(self.args.rungs))
        return common

    def stem(self, name: str, seed: int) -> Path:
        return cache_stem(self.cache, name, self.sizes(name)[0], self.args.epochs, seed)

    def progress(self, stage: str) -> list:
        """``fit``'s callbacks: an epoch bar named ``stage`` unless ``--quiet``."""
        return [FitProgress([stage], enabled=not self.args.quiet)]

    def model_path(self, name: str, model: str, seed: int) -> Path:
        return kept_model(self.stem(name, seed), model)

    def halving_folder(self, name: str, seed: int) -> Path:
        """Where restart ``seed``'s selection checkpoints each configuration, so that a
        stopped run resumes there (removed once its record is made)."""
        options = self.discriminator_options()
        tag = "-".join(["x".join(map(str, options["discriminator_units"])), f"tc{options.get('tc_rows', 'all')}",
                        dtype_label(options["discriminator_dtype"]), "r" + "-".join(map(str, self.args.rungs))])
        return Path(f"{self.stem(name, seed)}.{SELECTED}-{tag}.halving")

    def discriminator_options(self) -> dict:
        """COFHAE's discriminator settings of this study (``--discriminator-units``,
        ``--tc-rows``; the paper's 3 x 1000 on every row unless set)."""
        width = self.args.discriminator_units
        options = {"discriminator_dtype": self.discriminator_dtype,
                   "discriminator_units": [width] * 3 if width else list(PAPER_DISCRIMINATOR_UNITS)}
        if self.args.tc_rows:
            options["tc_rows"] = self.args.tc_rows
        return options

    def cached_codes(self, name: str, seed: int, initial_dim: int | None = None,
                     noise: float = 0.0) -> tuple[np.ndarray, dict]:
        """The training split's codes from the smooth autoencoder of restart ``seed``
        (``initial_dim`` codes, the paper's width unless set; trained once, then read
        from the cache) and the time training took (empty when cached). With ``noise``
        the autoencoder trains on the split observed through that observation noise."""
        paper_dim = paper_settings(name)["initial_dim"]
        initial_dim = initial_dim or paper_dim
        suffix = (f".d{initial_dim}" if initial_dim != paper_dim else "") + (f".noise{noise:g}" if noise else "")
        codes_file = self.stem(name, seed).with_suffix(f"{suffix}.codes.npy")
        if codes_file.exists():
            return np.load(codes_file), {}
        x = as_float(split(name, "train", self.sizes(name)[0], noise)[1] if noise else self.data(name)[0][1])
        keras.utils.set_random_seed(seed)  # the weights' initialisation
        ae = AE(x.shape[1:], latent_dim=initial_dim, activation="softplus", random_state=seed)
        resume = ResumableFit(self.stem(name, seed).with_suffix(f"{suffix}.autoencoder.backup"))
        fit_paper_schedule(ae, x, epochs=self.args.epochs, batch_size=self.args.batch_size, random_state=seed,
                           callbacks=self.progress("smooth autoencoder"), resume=resume)
        codes = ae.encode(training_dataset(x, None, self.args.batch_size, seed, shuffle=False))
        np.save(codes_file, codes)
        return codes, {"seconds_autoencoder": resume.seconds}

    def mimosa_file(self, name: str, seed: int) -> Path:
        """Where restart ``seed``'s MIMOSA hierarchy and assignments are cached."""
        return self.stem(name, seed).with_suffix(".mimosa.npz")

    def cached_mimosa(self, name: str, seed: int) -> tuple[Hierarchy, np.ndarray, dict]:
        """MIMOSA's hierarchy and assignments on the smooth autoencoder's codes of restart
        ``seed`` (computed once, then read from the cache) and the times it took."""
        mimosa_file = self.mimosa_file(name, seed)
        codes, times = self.cached_codes(name, seed)
        if mimosa_file.exists():
            saved = np.load(mimosa_file)
            return Hierarchy.from_json(str(saved["hierarchy"])), saved["assignments"], times
        options = paper_settings(name)
        options.pop("initial_dim")
        start = time.perf_counter()
        hierarchy, assignments = mimosa(codes, **options)
        times["seconds_mimosa"] = time.perf_counter() - start
        np.savez(mimosa_file, hierarchy=hierarchy.to_json(), assignments=assignments)
        return hierarchy, assignments, times

    def run_mimosa(self, name: str, seed: int) -> dict:
        (train_f, _), _ = self.data(name)
        gt = hier_datasets.ground_truth(name)
        hierarchy, assignments, times = self.cached_mimosa(name, seed)
        true_sigs, learned_sigs = Counter(gt.hierarchy.path_signatures), Counter(hierarchy.path_signatures)
        return {
            **self.common(name, "MIMOSA", seed),
            **mimosa_scores(gt, train_f, hierarchy, assignments),
            "h_error_tree_edit": hier_metrics.h_error(hierarchy, gt.hierarchy, method="tree_edit"),
            "true_paths": gt.hierarchy.num_paths,
            "learned_paths": hierarchy.num_paths,
            "paths_recovered": int(sum(min(true_sigs[s], learned_sigs[s]) for s in true_sigs)),
            "learned_hierarchy": hierarchy.to_json(),
            "mimosa_assignments": assignments_id(assignments),
            **times,
        }

    def run_model(self, name: str, model: str, seed: int, penalty: dict | None = None) -> dict:
        """Train ``model`` on restart ``seed`` and score it on the test split; a baseline
        takes ``penalty`` (e.g. ``{"beta": 2.0}``) over the study's setting of it."""
        (_, train_x), _ = self.data(name)
        train_x = as_float(train_x)
        gt = hier_datasets.ground_truth(name)
        extra, hierarchy, resume = {}, None, None
        kept = model + "".join(f"-{k}{v:g}" for k, v in (penalty or {}).items())
        keras.utils.set_random_seed(seed)  # the weights' initialisation (random_state seeds the rest)
        if model == SELECTED:
            hierarchy, assignments, extra = self.cached_mimosa(name, seed)
            options = self.discriminator_options()
            checkpoint = self.halving_folder(name, seed)
            chosen = successive_halving(train_x, hierarchy, assignments, grid=PAPER_GRID, rungs=self.args.rungs,
                                        batch_size=self.args.batch_size, random_state=seed, checkpoint=checkpoint,
                                        callbacks=lambda label: self.progress(f"{model} {label}"), **options)
            net = chosen.model
            trained = sum(sum(rung.seconds) for rung in chosen.rungs)  # over every chunk it was resumed in
            steps_per_epoch = math.ceil(len(train_x) / self.args.batch_size)
            extra.update(
                selection={"rule": "paper (lowest L_x among the lowest-L_a third of 27)", "schedule": "successive halving",
                           "grid": PAPER_GRID, "points": chosen.points, "chosen": chosen.points[chosen.choice],
                           "choice": chosen.choice, "ranking": chosen.ranking(),
                           "rungs": [dataclasses.asdict(r) for r in chosen.rungs]},
                steps=steps_per_epoch * sum(len(r.configurations) * (r.epochs - prev) for r, prev in
                                            zip(chosen.rungs, [0] + [r.epochs for r in chosen.rungs[:-1]])),
                discriminator_dtype=self.discriminator_dtype, learned_hierarchy=hierarchy.to_json(),
                mimosa_assignments=assignments_id(assignments),
            )
        elif model in COFHAE_VARIANTS:
            hierarchy, assignments, extra = self.cached_mimosa(name, seed)
            decoder_assignments = COFHAE_VARIANTS[model]
            start = time.perf_counter()
            net = train_cofhae(train_x, hierarchy, assignments, epochs=self.args.epochs,
                               batch_size=self.args.batch_size, random_state=seed,
                               discriminator_dtype=self.discriminator_dtype,
                               decoder_assignments=decoder_assignments, callbacks=self.progress(model)).model
            trained = time.perf_counter() - start
            extra["discriminator_dtype"] = self.discriminator_dtype
            extra["decoder_assignments"] = decoder_assignments
            extra["learned_hierarchy"] = hierarchy.to_json()
            extra["mimosa_assignments"] = assignments_id(assignments)
        else:
            cls, options = BASELINES[model]
            options = {**options, **(penalty or {})}
            if model == "FactorVAE":
                options = {**options, "discriminator_dtype": self.discriminator_dtype}
                extra["discriminator_dtype"] = self.discriminator_dtype
            net = cls(train_x.shape[1:], latent_dim=gt.hierarchy.num_dims, random_state=seed, **options)
            resume = ResumableFit(Path(f"{self.model_path(name, kept, seed)}.backup"), remove_when_done=False)
            fit_paper_schedule(net, train_x, epochs=self.args.epochs, batch_size=self.args.batch_size, random_state=seed,
                               callbacks=self.progress(model), resume=resume)
            trained = resume.seconds  # over every chunk it was resumed in
        save_keras(net, self.model_path(name, kept, seed))
        record = {**self.common(name, model, seed), **self.test_scores(name, net, hierarchy, seed), **extra,
                  "seconds": trained}
        # kept through scoring: a run stopped there resumes without training
        if model == SELECTED:
            shutil.rmtree(checkpoint)
        elif resume is not None:
            resume.discard()
        return record

    def test_scores(self, name: str, net, hierarchy: Hierarchy | None, seed: int) -> dict:
        """Every metric of a trained model on the test split (``hierarchy``: its code
        hierarchy, None for a flat code) and the seconds scoring took."""
        _, (test_f, test_x) = self.data(name)
        gt = hier_datasets.ground_truth(name)
        start = time.perf_counter()
        test = SplitArrays(name, "test", test_x, test_f, gt.active(test_f), gt.paths(test_f), gt.hierarchy)
        metrics = score(test, net.encode(as_float(test_x)), hierarchy=hierarchy,
                        representation=lambda obs: net.encode(as_float(obs)),
                        interventional_points=self.args.interventional_points, random_state=seed, show_progress=False)
        return {**metrics, "seconds_scoring": time.perf_counter() - start}


def add_restart_arguments(parser: argparse.ArgumentParser, out: Path, cache_help: str) -> None:
    """The options every study of restarts on the Ross study's data shares: seeds,
    training size, epochs, the cache, where records go, quiet and render-only."""
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--train-size", type=int, default=None, help="default: the registered split (a smaller one "
                        "is for trying the study out; records keep it)")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--cache", default="runs/ross2021-cache", help=cache_help)
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--quiet", action="store_true", help="no per-epoch progress bars")
    parser.add_argument("--render", action="store_true", help="only redraw the page")


def discriminator_dtype(choice: str) -> str | None:
    """The discriminators' dtype policy: ``auto`` is bfloat16 where the hardware computes
    it natively (a GPU, or a CPU with AVX512-BF16 or AMX), float32 elsewhere; it halves
    the run time of COFHAE and FactorVAE (``ross2021_speed.md``)."""
    if choice != "auto":
        return None if choice == "float32" else choice
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return "mixed_bfloat16"
    return "mixed_bfloat16" if machine()["native_bfloat16"] else None


def dtype_label(dtype: str | None) -> str:
    """How records and checkpoint folders name a discriminator dtype policy (``None``,
    Keras's default, is float32)."""
    return dtype or "float32"


def plan(args) -> list[tuple[str, str, int]]:
    """(dataset, model, seed) in order: MIMOSA restarts first (restart 0 on every dataset,
    then restart 1, ...), then the models."""
    units = [(d, "MIMOSA", s) for s in args.mimosa_seeds for d in args.datasets]
    units += [(d, m, s) for s in args.model_seeds for d in args.datasets for m in args.models]
    return units


def missing(study: Study, units: list[tuple[str, str, int]], records: list[dict]) -> list[tuple[str, str, int]]:
    """The ``units`` (:func:`plan`'s) that no record holds yet, in the order they run."""
    held = {key(r) for r in records}
    return [unit for unit in units if key(study.common(*unit)) not in held]


#: the fields of a record that add up to its cost: training (every chunk), scoring, and a
#: MIMOSA restart's smooth autoencoder and MIMOSA itself
COST_FIELDS = ("seconds", "seconds_scoring", "seconds_autoencoder", "seconds_mimosa")


def pending_report(args, study: Study) -> list[str]:
    """``--pending``: each run still to do, with the median minutes of the recorded runs of
    the same model, dataset, sizes and selection setting (other restarts; the machines that
    recorded them may differ), a COFHAE run's also with its restart's smooth autoencoder and
    MIMOSA where ``--cache`` lacks them, and the total."""
    records, units = load_records(args.out), plan(args)
    todo = missing(study, units, records)
    if not todo:
        return [f"nothing pending: {args.out} holds all {len(units)} runs these options name"]

    def minutes(name: str, model: str, seed: int) -> list[float]:
        alike = key(study.common(name, model, seed))
        trained = "seconds_autoencoder" if model == "MIMOSA" else "seconds"  # absent where read from the cache
        return [sum(r.get(f, 0.0) for f in COST_FIELDS) / 60 for r in records
                if key(r)[:2] + key(r)[3:] == alike[:2] + alike[3:] and trained in r]

    lines = [f"{len(todo)} of the {len(units)} runs these options name are not in {args.out}; minutes: the "
             "median of the recorded restarts of the same run (any machine)"]
    total, unknown = 0.0, 0
    for name, model, seed in todo:
        costs, also = minutes(name, model, seed), ""
        if (model not in BASELINES and model != "MIMOSA" and (name, "MIMOSA", seed) not in todo
                and not study.mimosa_file(name, seed).exists()):
            mimosa_costs = minutes(name, "MIMOSA", seed)
            costs = [c + float(np.median(mimosa_costs)) for c in costs] if mimosa_costs else []
            also = ", with its smooth autoencoder and MIMOSA, not in --cache"
        if costs:
            total += float(np.median(costs))
            estimate = f"~{np.median(costs):.0f} min ({len(costs)} recorded{also})"
        else:
            unknown += 1
            estimate = "no recorded restart to estimate from"
        lines.append(f"  {model} {name} seed {seed}: {estimate}")
    lines.append(f"total ~{total / 60:.1f} h" + (f", plus {unknown} runs without an estimate" if unknown else ""))
    return lines


# ------------------------------------------------------------------- report
def table1(records: list[dict]) -> list[str]:
    lines = [
        "| dataset | train | epochs | restarts | purity | coverage | H-error | H-error (tree edit) | paths recovered |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    mimosa_runs = [r for r in records if r["model"] == "MIMOSA"]
    for name, train, epochs in dict.fromkeys((r["dataset"], r["train_size"], r["epochs"]) for r in mimosa_runs):
        rows = [r for r in mimosa_runs if (r["dataset"], r["train_size"], r["epochs"]) == (name, train, epochs)]
        h = [r["h_error"] for r in rows]
        found = Counter(f"{r['paths_recovered']} of {r['true_paths']}" for r in rows)
        lines.append(
            f"| {name} | {train:,} | {epochs} | {len(rows)} | {mean_std([r['purity'] for r in rows])} | "
            f"{mean_std([r['coverage'] for r in rows])} | {np.mean(h):.1f} (max {max(h)}) | "
            f"{np.mean([r['h_error_tree_edit'] for r in rows]):.1f} | "
            + ", ".join(f"{k} ({v}x)" for k, v in found.most_common()) + " |"
        )
    return lines


def shown_models(records: list[dict]) -> tuple[str, ...]:
    """The single-run models of the history table: the paper's four, and COFHAE-ST once it
    has a run."""
    return MODELS + ((STRAIGHT_THROUGH,) if any(r["model"] == STRAIGHT_THROUGH for r in records) else ())


#: Fig. 3 under the paper's protocol: COFHAE chosen by the rule, and the baselines
HEADLINE_MODELS = (SELECTED, *BASELINES)
#: the authors' default configuration: COFHAE's own defaults for the grid's hyperparameters
DEFAULT_POINT = {name: inspect.signature(COFHAE).parameters[name].default for name in PAPER_GRID}
#: the record of ``benchmarks.cofhae_ablation`` that trains the default configuration once
#: on a restart's MIMOSA output, with the study's 3 x 256 discriminator
PAIRED_VARIANT = "disc-256"
#: how close two R4c values count as level in :func:`selection_table`'s tally
LEVEL = 0.02


def _cells(records: list[dict], models, field: str = "r4c") -> list[tuple[str, list]]:
    """(dataset, [(model, values of ``field`` over its restarts)]) at the registered
    size and 50 epochs, in the paper's dataset order."""
    rows = []
    for name in PAPER_DATASETS:
        runs = [r for r in records if r["dataset"] == name and r["train_size"] == registered_sizes(name)[0]
                and r["epochs"] == 50]
        per_model = [(m, [r[field] for r in runs if r["model"] == m]) for m in models]
        if any(values for _, values in per_model):
            rows.append((name, per_model))
    return rows


def headline_table(records: list[dict]) -> list[str]:
    lines = ["| dataset | " + " | ".join(f"{m} R4c (restarts)" for m in HEADLINE_MODELS) + " |",
             "|---|" + "---:|" * len(HEADLINE_MODELS)]
    for name, per_model in _cells(records, HEADLINE_MODELS):
        cells = [f"{mean_std(v)} ({len(v)})" if v else "-" for _, v in per_model]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def history_table(records: list[dict]) -> list[str]:
    models = shown_models(records)
    lines = ["| dataset | train | epochs | " + " | ".join(f"{m} R4c" for m in models) + " | COFHAE R4 |",
             "|---|---:|---:|" + "---:|" * (len(models) + 1)]
    model_runs = [r for r in records if r["model"] in models]
    for name, train, epochs in dict.fromkeys((r["dataset"], r["train_size"], r["epochs"]) for r in model_runs):
        cells = []
        for m, field in [(m, "r4c") for m in models] + [("COFHAE", "r4")]:
            rows = [r for r in model_runs if (r["dataset"], r["train_size"], r["epochs"], r["model"])
                    == (name, train, epochs, m)]
            cells.append(mean_std([r[field] for r in rows]) if rows else "-")
        lines.append(f"| {name} | {train:,} | {epochs} | " + " | ".join(cells) + " |")
    return lines


def _cell(record: dict, field: str) -> str:
    """A record's value for a table: floats to three decimals, '-' where it has none."""
    value = record.get(field, "-")
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def other_metrics_table(records: list[dict]) -> list[str]:
    columns = ("r4", "dci_disentanglement", "mig", "sap", "factor_vae_eval_accuracy", "beta_vae_eval_accuracy",
               "h_error", "purity", "seconds")
    lines = ["| dataset | model | seed | " + " | ".join(columns) + " |", "|---|---|---:|" + "---:|" * len(columns)]
    models = shown_models(records)
    for r in records:
        if r["model"] in models:
            cells = [_cell(r, c) for c in columns[:-1]]
            lines.append(f"| {r['dataset']} | {r['model']} | {r['seed']} | " + " | ".join(cells)
                         + f" | {r['seconds']:.0f} |")
    return lines


def _point(point: dict) -> str:
    return ", ".join(f"{point[name]:g}" for name in PAPER_GRID)


def selection_table(records: list[dict], paired: list[dict]) -> list[str]:
    """Every ``COFHAE-SH`` restart: its R4c, the configuration the rule chose, the
    lambda_tc of the configurations that reached the last rung, the last rung the
    default configuration reached, and the default configuration trained once on the same
    restart (``paired``: ``benchmarks.cofhae_ablation`` records, variant
    :data:`PAIRED_VARIANT`, at the same precision where there is one; marked where its
    record's MIMOSA fingerprint differs from the restart's), with a tally."""
    runs = [r for r in records if r["model"] == SELECTED]
    if not runs:
        return []
    order = PAPER_DATASETS + REFERENCE_DATASETS
    grid, weakest = ", ".join(PAPER_GRID), min(PAPER_GRID["lambda_tc"])
    lines = [f"| dataset | restart | R4c | chosen ({grid}) | last rung's lambda_tc | default reached rung "
             f"| default ({_point(DEFAULT_POINT)}) R4c | minutes |", "|---|---:|---:|---|---|---:|---:|---:|"]
    tally = Counter()
    for r in sorted(runs, key=lambda r: (order.index(r["dataset"]) if r["dataset"] in order else len(order), r["seed"])):
        selection, dtype = r["selection"], r.get("discriminator_dtype") or "float32"
        points, rungs = selection["points"], selection["rungs"]
        finalists = [points[i]["lambda_tc"] for i in rungs[-1]["configurations"]]
        reached = max(k for k, rung in enumerate(rungs, 1) if DEFAULT_POINT in [points[i] for i in rung["configurations"]])
        defaults = [p for p in paired if (p["dataset"], p["seed"], p["variant"], p["cofhae_epochs"])
                    == (r["dataset"], r["seed"], PAIRED_VARIANT, r["epochs"])
                    and p["discriminator_units"] == r["discriminator_units"]]
        default = ([p for p in defaults if p["discriminator_dtype"] == dtype] or defaults or [None])[-1]
        cell = "-"
        if default is not None:
            value = default["registered_test"]["r4c"]
            marks = [default["discriminator_dtype"]] if default["discriminator_dtype"] != dtype else []
            if len({default.get("mimosa_assignments"), r.get("mimosa_assignments")} - {None}) > 1:  # both known, unequal
                marks.append("other MIMOSA assignments")
            cell = f"{value:.3f}" + (f" ({'; '.join(marks)})" if marks else "")
            tally["level" if abs(r["r4c"] - value) <= LEVEL else "above" if r["r4c"] > value else "below"] += 1
        tally["chose the weakest"] += selection["chosen"]["lambda_tc"] == weakest
        tally["finalists all the weakest"] += set(finalists) == {weakest}
        tally["default in last rung"] += reached == len(rungs)
        lines.append(f"| {r['dataset']} | {r['seed']} | {r['r4c']:.3f} | {_point(selection['chosen'])} | "
                     f"{', '.join(f'{v:g}' for v in finalists)} | {reached} of {len(rungs)} | {cell} | "
                     f"{r['seconds'] / 60:.0f} |")
    paired_runs = tally["above"] + tally["level"] + tally["below"]
    return lines + ["", f"Of {len(runs)} restarts: the rule chose lambda_tc {weakest:g} on "
                    f"{tally['chose the weakest']}; every configuration of the last rung had it on "
                    f"{tally['finalists all the weakest']}; the default configuration reached the last rung on "
                    f"{tally['default in last rung']}. Against the default trained once on the same restart "
                    f"({paired_runs} restarts): the rule's choice above it by more than {LEVEL} on {tally['above']}, "
                    f"within {LEVEL} on {tally['level']}, below by more on {tally['below']}."]


def superseded_table(path: Path) -> list[str]:
    """The records at ``path`` (``ross2021_superseded.json``): runs taken out of the
    tables above because a later run of the same restart replaced them, each with why."""
    records = load_records(path)
    if not records:
        return []
    lines = ["## Superseded records", "",
             f"Taken out of the tables above (kept in `{path.name}`) because a later run of the same restart "
             "replaced them:", "",
             "| dataset | model | seed | H-error | purity | coverage | R4c | why |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in records:
        cells = [_cell(r, c) for c in ("h_error", "purity", "coverage", "r4c")]
        lines.append(f"| {r['dataset']} | {r['model']} | {r['seed']} | " + " | ".join(cells)
                     + f" | {r['superseded_because']} |")
    return lines + [""]


def figure(records: list[dict], path: Path) -> bool:
    """Fig. 3's manner: R4c per dataset and model, every restart a point, the mean a bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = _cells(records, HEADLINE_MODELS)
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(1.1 * len(rows) + 3, 3.6))
    width = 0.8 / len(HEADLINE_MODELS)
    for i, model in enumerate(HEADLINE_MODELS):
        offset = (i - (len(HEADLINE_MODELS) - 1) / 2) * width
        colour = f"C{i}"
        for j, (_, per_model) in enumerate(rows):
            values = dict(per_model)[model]
            if values:
                ax.bar(j + offset, np.mean(values), width, color=colour, alpha=0.35)
                ax.scatter(np.full(len(values), j + offset), values, s=10, color=colour, zorder=3)
    names = [n.replace("chopsticks/", "") for n, _ in rows]
    ax.set_xticks(np.arange(len(rows)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("R4c (test split)")
    ax.set_ylim(0, 1.02)
    ax.legend(handles=[Patch(color=f"C{i}", alpha=0.6, label=model) for i, model in enumerate(HEADLINE_MODELS)],
              fontsize=8, ncol=len(HEADLINE_MODELS), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def render(out: Path) -> None:
    records = load_records(out)
    page = out.with_suffix(".md")
    notes = kept_notes(page, "")
    png = out.with_name(out.stem + "_r4c.png")
    lines = [
        "# Ross & Doshi-Velez (2021), a partial reproduction: Table 1 and Fig. 3",
        "",
        "`python -m benchmarks.ross2021` (resumes; `--help` for the options); records in `ross2021.json`.",
        "Smooth autoencoder, MIMOSA, COFHAE and the baselines as in the paper (section 7, appendix A):",
        "50 epochs, batch 256, Adam 1e-3 / 10 at 50% / 100 at 75% of the steps, the registered splits",
        "(90,000 / 10,000 Chopsticks, 54,000 / 6,000 Spaceshapes). Runs with other sizes say so in their rows.",
        "",
        "## Table 1: MIMOSA (training split)",
        "",
        "The paper (5 restarts): H-error 0 on every dataset but depth-3 `either` (12 of 14 paths",
        "recovered); purity and coverage high, often near 1 (depth-2 `either`: purity 0.998, coverage",
        "0.937; its table's digits are not legible in the text we have).",
        "",
        *table1(records),
        "",
        "## Fig. 3: R4c per model under the paper's protocol (test split)",
        "",
        "The paper: COFHAE's R4c near-perfect on 6 of 9 datasets and above every baseline on all;",
        "lower on Spaceshapes and depth-3 `either` and `both`. Its one Spaceshapes COFHAE shown in",
        "numbers, Fig. 12c's, has R4c 0.89 (R4 0.79), its beta-TCVAE of Fig. 12b 0.69 (R4 0.47): single",
        "selected models, not means over runs.",
        "",
        f"Ours: `{SELECTED}` is COFHAE chosen, on each restart, by the paper's rule (the lowest training",
        "reconstruction among the third of the 27 configurations with the lowest assignment loss,",
        "appendix A.1) run as successive halving (27 configurations for 3 epochs, the best 9 to 10, the",
        "best 3 to 50); its record names its discriminator setting. Baselines: AE, beta-TCVAE (beta 5),",
        "FactorVAE (gamma 10). Mean ± sample standard deviation over restarts (their number in brackets).",
        "",
        *headline_table(records),
        "",
    ]
    if figure(records, png):
        lines += [f"![R4c per model and dataset, every restart a point]({png.name})", ""]
    lines += [
        "## History: single runs of one configuration (superseded by the protocol above)",
        "",
        "COFHAE trained once per seed at the authors' default configuration (tau 1, lambda_assign 100,",
        "lambda_tc 10), without selection; the protocol's rows above replace these as they land.",
        "",
        *history_table(records),
        "",
    ]
    selections = selection_table(records, load_records(out.with_name("cofhae_ablation.json")))
    if selections:
        lines += ["## Every selection (`COFHAE-SH` restarts)", "",
                  "Per restart: the configuration the paper's rule chose, the lambda_tc of the configurations "
                  "that reached the last rung (`selection.rungs` in the record), the last rung the authors' "
                  "default configuration reached, and that default trained once on the same restart's MIMOSA "
                  f"output with the same discriminator (`cofhae_ablation.json`, variant `{PAIRED_VARIANT}`; its "
                  "precision named where it differs, and marked where its record's fingerprint of the MIMOSA "
                  "assignments differs from the restart's). Minutes: training, as recorded.", "", *selections, ""]
    lines += superseded_table(superseded_path(out))
    lines += ["## Every metric, per run", "", *other_metrics_table(records), "", NOTES_MARK]
    page.write_text("\n".join(lines) + (notes if notes else "\n"))


# --------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    """This study's options; their defaults are every study's (:meth:`Study.configured`)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=PAPER_DATASETS + REFERENCE_DATASETS)
    parser.add_argument("--mimosa-seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    parser.add_argument("--model-seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=(*MODELS, STRAIGHT_THROUGH, SELECTED),
                        help=f"default: {' '.join(MODELS)}; {STRAIGHT_THROUGH} is COFHAE with straight-through "
                             f"assignments (decoder_assignments); {SELECTED} is COFHAE chosen by the paper's rule "
                             "over its 27-point grid, run as successive halving (--rungs)")
    parser.add_argument("--rungs", type=int, nargs="+", default=[3, 10, 50],
                        help=f"{SELECTED}: cumulative epochs at which the grid is ranked and a third kept; the last "
                             "must equal --epochs")
    parser.add_argument("--discriminator-units", type=int, default=None,
                        help=f"{SELECTED}: width of each of the discriminator's 3 hidden layers (default 1000)")
    parser.add_argument("--tc-rows", type=int, default=None,
                        help=f"{SELECTED}: rows of each batch for the TC term and discriminator step (default all)")
    parser.add_argument("--train-size", type=int, default=None, help="default: the registered split size")
    parser.add_argument("--test-size", type=int, default=None, help="default: the registered split size")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--interventional-points", type=int, default=10_000)
    parser.add_argument("--discriminator-dtype", default="auto", choices=("auto", "float32", "mixed_bfloat16"),
                        help="COFHAE's and FactorVAE's discriminators (auto: bfloat16 where supported)")
    parser.add_argument("--out", type=Path, default=RESULTS / "ross2021.json")
    parser.add_argument("--cache", default="runs/ross2021-cache", help="smooth-autoencoder codes and MIMOSA output")
    parser.add_argument("--render", action="store_true", help="only redraw the page from the records")
    parser.add_argument("--supersede", metavar="REASON", default=None,
                        help="move the records of the runs these options name to ross2021_superseded.json with "
                             "REASON, redraw the page and stop; the same command without it trains them again")
    parser.add_argument("--pending", action="store_true",
                        help="list the runs these options name that --out does not hold yet, with the minutes "
                             "their recorded restarts took, and stop")
    parser.add_argument("--quiet", action="store_true", help="no per-epoch progress bars")
    return parser


def main(argv=None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if SELECTED in args.models and args.rungs[-1] != args.epochs:
        parser.error(f"the last of --rungs ({args.rungs[-1]}) must equal --epochs ({args.epochs})")
    unknown = [d for d in args.datasets if d not in PAPER_DATASETS + REFERENCE_DATASETS]
    if unknown:
        parser.error(f"unknown datasets {unknown}; choose from {sorted(PAPER_DATASETS + REFERENCE_DATASETS)}")
    if args.supersede is not None and not args.supersede.strip():
        parser.error("--supersede needs a reason: the page lists it beside each record it moves")
    if args.supersede is not None:
        study = Study(args)
        named = {key(study.common(*unit)) for unit in plan(args)}
        moved = supersede(args.out, lambda record: key(record) in named, args.supersede)
        if not moved:
            parser.error(f"no record in {args.out} matches the runs these options name; nothing superseded")
        runs = ", ".join(f"{r['model']} {r['dataset']} seed {r['seed']}" for r in moved)
        print(f"superseded {len(moved)} record{'' if len(moved) == 1 else 's'}: {runs}", flush=True)
    elif args.pending:
        print("\n".join(pending_report(args, Study(args))), flush=True)
        return
    elif not args.render:
        study = Study(args)
        todo = missing(study, plan(args), load_records(args.out))
        for i, (name, model, seed) in enumerate(todo, start=1):
            start = time.perf_counter()
            print(f"[{i}/{len(todo)}] {model} {name} seed {seed}", flush=True)
            record = study.run_mimosa(name, seed) if model == "MIMOSA" else study.run_model(name, model, seed)
            append_record(args.out, record)
            render(args.out)
            summary = {k: record[k] for k in ("h_error", "purity", "coverage", "r4c", "r4") if k in record}
            print(f"  done in {time.perf_counter() - start:.0f} s:", re.sub(r"[{}']", "", str(summary)), flush=True)
    render(args.out)


if __name__ == "__main__":
    main()
