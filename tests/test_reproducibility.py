"""Same seed, same results: every model trained twice with one seed ends with the same
weights, bit for bit, and two whole ``hierbench run`` calls write the same codes,
hierarchy and metrics. What makes it hold: ``keras.utils.set_random_seed`` before
the networks are built (initial weights), the seeded ``tf.data`` shuffle of
:func:`hier_models.training.training_dataset`, per-step stateless draws from
``(seed, step)`` for the sampling noise and the TC discriminators' permutations, a
fixed-seed MIMOSA, and scores seeded by ``random_state``."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import keras
import numpy as np
import pytest

import hier_datasets
import hier_models
from conftest import CLI_DATASET
from hier_models.cofhae import targets_from_factors
from hier_models.halving_checkpoint import CheckpointMismatch
from hier_models.training import STEPS_PER_EXECUTION, ResumableFit, fit_paper_schedule
from hierbench.cli import main
from stopping import StopAtEpoch

GROUND_TRUTH = hier_datasets.ground_truth("chopsticks/depth2_inter")
FACTORS, SERIES = GROUND_TRUTH.sample(96, 0)
SERIES = SERIES.astype(np.float32)
TINY = dict(hidden_units=(16,))
LADDER = dict(hidden_units=(16,), fade_in_steps=2, beta_anneal_steps=2)
CASES = [
    (hier_models.AE, dict(latent_dim=3, **TINY)),
    (hier_models.VAE, dict(latent_dim=3, beta=4.0, **TINY)),
    (hier_models.BetaTCVAE, dict(latent_dim=3, dataset_size=len(SERIES), **TINY)),
    (hier_models.FactorVAE, dict(latent_dim=3, discriminator_units=(16,), **TINY)),
    (hier_models.ProVLAE, LADDER),
    (hier_models.ProLVAE, LADDER),
    (hier_models.COFHAE, dict(hierarchy=GROUND_TRUTH.hierarchy, discriminator_units=(16,), **TINY)),
]


def _train(cls, kwargs, seed, **compile_options):
    """Weights before and after two epochs of 3 steps (reshuffled in between) with the
    paper's schedule, seeded as ``hierbench train`` seeds them."""
    targets = targets_from_factors(GROUND_TRUTH.hierarchy, FACTORS) if cls is hier_models.COFHAE else None
    keras.utils.set_random_seed(seed)
    model = cls(SERIES.shape[1:], random_state=seed, **kwargs)
    initial = [np.array(v) for v in model.variables]
    fit_paper_schedule(model, SERIES, targets, epochs=2, batch_size=32, random_state=seed, **compile_options)
    assert model.step == 6
    return initial, [np.array(v) for v in model.variables]


@pytest.mark.parametrize("cls, kwargs", CASES, ids=[cls.__name__ for cls, _ in CASES])
def test_same_seed_same_weights(cls, kwargs):
    initial, first = _train(cls, kwargs, 3)
    _, again = _train(cls, kwargs, 3)
    assert len(first) == len(again)
    for a, b in zip(first, again):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    # the comparison can fail: training moved every weight matrix
    matrices = [(a, b) for a, b in zip(initial, first) if a.ndim == 2]
    assert matrices and all(not np.array_equal(a, b) for a, b in matrices)


@pytest.mark.parametrize("cls, kwargs", [CASES[1], CASES[3], CASES[6]], ids=["VAE", "FactorVAE", "COFHAE"])
def test_several_steps_per_call_train_to_the_same_weights_as_one(cls, kwargs):
    """``fit_paper_schedule`` runs ``STEPS_PER_EXECUTION`` steps per call (here more
    than an epoch's 3), and 2 per call splits each epoch unevenly: both train to the
    weights of one step per call, bit for bit."""
    assert STEPS_PER_EXECUTION > 3
    _, one = _train(cls, kwargs, 3, steps_per_execution=1)
    for compile_options in ({}, {"steps_per_execution": 2}):
        _, several = _train(cls, kwargs, 3, **compile_options)
        assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(one, several, strict=True))


def test_another_seed_other_weights():
    (_, first), (_, other) = (_train(hier_models.BetaTCVAE, CASES[2][1], seed) for seed in (3, 4))
    matrices = [(a, b) for a, b in zip(first, other) if a.ndim == 2]
    assert matrices and all(not np.array_equal(a, b) for a, b in matrices)


def _fit(cls, kwargs, epochs=4, **fit_options):
    keras.utils.set_random_seed(5)
    model = cls(SERIES.shape[1:], random_state=5, **kwargs)
    history = fit_paper_schedule(model, SERIES, epochs=epochs, batch_size=32, random_state=5, **fit_options)
    return model, history


@pytest.mark.parametrize("cls, kwargs", [CASES[1], CASES[3]], ids=["VAE", "FactorVAE"])
def test_a_stopped_fit_resumes_to_the_weights_of_an_unbroken_one(cls, kwargs, tmp_path):
    """Weights, both optimisers, the step count behind the schedule and the per-step
    draws, and the shuffled order all carry over: a fit stopped after 2 of 4 epochs
    and resumed in a fresh model ends where the unbroken fit ends."""
    whole, whole_history = _fit(cls, kwargs)
    with pytest.raises(KeyboardInterrupt):
        _fit(cls, kwargs, resume=ResumableFit(tmp_path / "backup"), callbacks=[StopAtEpoch(2)])
    first_chunk = ResumableFit(tmp_path / "backup")
    assert first_chunk.epochs_done == 2 and first_chunk.seconds > 0
    shutil.copytree(tmp_path / "backup", tmp_path / "copy")
    # a folder saved by another fit is refused and left as it was
    with pytest.raises(CheckpointMismatch, match=r"another fit \(its epochs differ\)"):
        _fit(cls, kwargs, epochs=5, resume=ResumableFit(tmp_path / "backup"))
    assert ResumableFit(tmp_path / "backup").epochs_done == 2
    resume = ResumableFit(tmp_path / "backup")
    resumed, history = _fit(cls, kwargs, resume=resume)
    assert resumed.step == whole.step == 12
    assert history.history["loss"] == pytest.approx(whole_history.history["loss"][2:], rel=1e-5)
    for a, b in zip(whole.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert resume.seconds > first_chunk.seconds
    assert resume.history["loss"] == pytest.approx(first_chunk.history["loss"] + history.history["loss"])
    assert resume.history["loss"] == pytest.approx(whole_history.history["loss"], rel=1e-5)
    assert not (tmp_path / "backup").exists(), "a finished fit leaves no backup behind"
    # Keras's own BackupAndRestore restores the weights but not the data order: the
    # comparison above can fail
    plain, _ = _fit(cls, kwargs, callbacks=[keras.callbacks.BackupAndRestore(str(tmp_path / "copy"))])
    assert plain.step == 12
    assert not all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(whole.get_weights(), plain.get_weights()))


#: what a run writes that must be the same bytes (history.json and run.json hold times,
#: summary.md holds them in one line)
SAME_BYTES = ["metrics.json"]
MODEL_FILES = ["codes.npy", "metrics.json"]
HIERARCHICAL_FILES = ["hierarchy.json", "assignments.npy", "initial_codes.npy"]


def _run(data_dir, out: Path, seed: int) -> Path:
    argv = ["run", "--datasets", "chopsticks/depth2_either", "--models", "AE", "BetaTCVAE", "Hierarchical",
            "--seeds", str(seed), "--train-size", "400", "--test-size", "300", "--epochs", "1",
            "--autoencoder-epochs", "2", "--interventional-points", "60", "--quiet",
            "--data-dir", data_dir, "--out", str(out)]
    assert main(argv) == 0
    return out


def _written(out: Path) -> dict[str, bytes]:
    files = {name: (out / name).read_bytes() for name in SAME_BYTES}
    summary = (out / "summary.md").read_text().splitlines()
    files["summary.md"] = "\n".join(line for line in summary if not re.fullmatch(r"The run took \d+ s\.", line)).encode()
    assert len(files["summary.md"].splitlines()) == len(summary) - 1
    for folder in sorted(p.parent for p in out.rglob("codes.npy")):
        names = MODEL_FILES + (HIERARCHICAL_FILES if (folder / "hierarchy.json").exists() else [])
        files.update({f"{folder.relative_to(out)}/{n}": (folder / n).read_bytes() for n in names})
    return files


@pytest.mark.slow
def test_two_runs_with_one_seed_write_the_same_bytes(cli_data_dir, tmp_path):
    assert CLI_DATASET.startswith("chopsticks/depth2_either_400_300")
    first = _written(_run(cli_data_dir, tmp_path / "first", 0))
    again = _written(_run(cli_data_dir, tmp_path / "again", 0))
    assert sum(name.endswith("/codes.npy") for name in first) == 3
    assert sum(name.endswith("hierarchy.json") for name in first) == 1
    assert first.keys() == again.keys()
    assert [name for name in first if first[name] != again[name]] == []


def test_run_json_records_what_decides_cross_machine_equality(monkeypatch):
    import json

    import tensorflow as tf

    from hierbench.job import KERNEL_VARIABLES, environment

    for name in KERNEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    record = json.loads(json.dumps(environment()))
    assert record["tensorflow"] == tf.__version__
    assert record["variables"] == {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    assert record["intra_op_threads"] == tf.config.threading.get_intra_op_parallelism_threads()
    assert all(f.startswith(("avx", "amx")) for f in record["cpu_vector_extensions"])
