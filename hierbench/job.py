"""The main job, ``hierbench run``: build, train, score and report into a run folder
(:mod:`hierbench.run_folders`), as :class:`~hierbench.settings.RunSettings` say."""
from __future__ import annotations

import dataclasses
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from hier_models import distribute
from hier_models.hierarchical import halving_rungs
from hier_models.recipes import code_hierarchy, encode, score
from hierbench import options as model_options
from hierbench.datasets import DatasetRef, load_split, prepare, resolve_dataset
from hierbench.errors import CommandError
from hierbench.files import check_writable, write_json, write_npy
from hierbench.models import save_training, train
from hierbench.report import report_run
from hierbench.run_folders import HALVING_CHECKPOINT, RECORD, checkpoint_folder, model_folder, write_data
from hierbench.settings import RunSettings

__all__ = ["KERNEL_VARIABLES", "environment", "run"]


#: environment variables that choose TensorFlow's CPU kernels or thread pools
KERNEL_VARIABLES = ("TF_ENABLE_ONEDNN_OPTS", "ONEDNN_MAX_CPU_ISA", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def environment() -> dict:
    """What decides whether another machine repeats a run bit for bit: library
    versions, the CPU's vector instruction sets (oneDNN, which TensorFlow's CPU matrix
    products call, picks its kernels by them unless ``ONEDNN_MAX_CPU_ISA`` caps
    them), thread pools and :data:`KERNEL_VARIABLES`; written to ``run.json``."""
    import keras
    import numpy
    import tensorflow as tf

    flags: list[str] = []
    try:
        with open("/proc/cpuinfo") as cpuinfo:  # Linux; elsewhere the list stays empty
            flags = next((line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")), [])
    except OSError:
        pass
    return dict(
        tensorflow=tf.__version__, keras=keras.__version__, numpy=numpy.__version__, machine=platform.machine(),
        cpu_count=os.cpu_count(), cpu_vector_extensions=sorted({f for f in flags if f.startswith(("avx", "amx"))}),
        intra_op_threads=tf.config.threading.get_intra_op_parallelism_threads(),
        inter_op_threads=tf.config.threading.get_inter_op_parallelism_threads(),
        variables={k: os.environ[k] for k in KERNEL_VARIABLES if k in os.environ},
    )


def _label(model: str, seed: int, dataset: DatasetRef, settings: RunSettings) -> str:
    label = model_options.row_label(model)
    if len(settings.seeds) > 1:
        label += f" seed {seed}"
    if len(settings.datasets) > 1:
        label += f" on {dataset.name}"
    return label


def _check(settings: RunSettings) -> tuple[Path, list[DatasetRef], list[str]]:
    """The output folder, datasets and models of ``settings``, every name and option
    checked before anything is built or trained."""
    out = check_writable(settings.out)
    datasets = [resolve_dataset(name, settings.train_size, settings.test_size) for name in settings.datasets]
    models = [model_options.resolve_model(m) for m in settings.models]
    selecting = settings.grid or settings.halving
    if selecting and model_options.HIERARCHICAL not in models:
        raise CommandError(f"--grid selects COFHAE's hyperparameters; add {model_options.HIERARCHICAL} to the models")
    for model in models:
        chosen = model_options.check_options(model, settings.options.get(model, {}))
        if model == model_options.HIERARCHICAL:
            model_options.check_grid(model, model_options.PAPER_GRID if selecting else None, chosen)
            for dataset in datasets:
                model_options.initial_dim(dataset, chosen)
    if not settings.seeds:
        raise CommandError("give at least one seed")
    return out, datasets, models


def run(settings: RunSettings, *, show_progress: bool = True, log=print) -> tuple[dict, float]:
    """Build, train, score and report; returns the metrics by row label and the seconds taken.

    With ``settings.strategy="multiworker"`` every worker of the cluster runs this; the
    chief writes the run folder, the others a temporary one that is removed at the end
    (they train in step with the chief, and saving may read variables across workers)."""
    # first: a multi-worker strategy configures its collectives before TensorFlow runs anything
    try:
        chief = distribute.is_chief(distribute.get_strategy(settings.strategy))
    except ValueError as err:
        raise CommandError(str(err)) from err
    if chief:
        return _run_settings(settings, show_progress, log)
    scratch = tempfile.mkdtemp(prefix="hierbench-worker-")
    try:
        return _run_settings(dataclasses.replace(settings, out=scratch), show_progress, log)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_settings(settings: RunSettings, show_progress: bool, log) -> tuple[dict, float]:
    out, datasets, models = _check(settings)
    log(f"hierbench run: {settings.describe()}")
    log(f"output: {out}")
    record = dict(settings=dataclasses.asdict(settings), datasets=[d.name for d in datasets], environment=environment(),
                  entries=[])
    started = time.perf_counter()

    def say(text: str) -> None:
        log(f"[{time.perf_counter() - started:5.0f} s] {text}")

    for dataset in datasets:
        builder = prepare(dataset, settings.data_dir)
        train_split = load_split(builder, "train", show_progress=show_progress)
        test_split = load_split(builder, "test", show_progress=show_progress)
        data = write_data(out, train_split, test_split)
        for model in models:
            for seed in settings.seeds:
                label = _label(model, seed, dataset, settings)
                say(f"{label}: training on {len(train_split)} examples")
                hierarchical = model == model_options.HIERARCHICAL
                grid = model_options.PAPER_GRID if (settings.grid or settings.halving) and hierarchical else None
                rungs = halving_rungs(settings.epochs) if settings.halving and hierarchical else None
                folder = model_folder(dataset.name, model, seed)
                trained = train(model, train_split, epochs=settings.epochs, autoencoder_epochs=settings.autoencoder_epochs,
                                batch_size=settings.batch_size, seed=seed, options=settings.options.get(model, {}),
                                show_progress=show_progress, grid=grid, rungs=rungs, strategy=settings.strategy,
                                checkpoint=checkpoint_folder(out / folder, model, train_split.family, bool(rungs)))
                save_training(trained, out / folder)
                codes = encode(trained.model, test_split.observations, test_split.scale)
                say(f"{label}: scoring {len(test_split)} test examples")
                metrics = score(
                    test_split, codes, hierarchy=code_hierarchy(trained.model),
                    representation=lambda obs, m=trained.model: encode(m, obs, test_split.scale),
                    interventional_points=settings.interventional_points, random_state=seed, show_progress=show_progress,
                )
                metrics.update(trained.mimosa_scores)
                write_npy(out / folder / "codes.npy", codes)
                write_json(out / folder / "metrics.json", metrics)
                shutil.rmtree(out / folder / HALVING_CHECKPOINT, ignore_errors=True)  # kept until the entry is whole
                record["entries"].append(dict(label=label, dataset=dataset.name, data=data.as_posix(), model=model,
                                              seed=seed, folder=folder.as_posix(), train_seconds=round(trained.seconds, 1)))
                write_json(out / RECORD, record)
    record["seconds"] = round(time.perf_counter() - started, 1)
    write_json(out / RECORD, record)
    say("drawing the report")
    metrics = report_run(out, show_progress=show_progress)
    return metrics, time.perf_counter() - started
