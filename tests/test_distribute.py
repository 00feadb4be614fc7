"""Training under tf.distribute equals single-device training on the global batches.

The two-replica checks run in a fresh process (``distribute_checks.py``), which
splits the CPU into two logical devices before TensorFlow initialises them.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import hier_models
from conftest import CLI_DATASET
from hier_models import distribute, losses
from hierbench.cli import main

CHECKS = Path(__file__).with_name("distribute_checks.py")
ROOT = CHECKS.parent.parent
#: models and estimators checked in the default run (each takes a few seconds); the others are slow
FAST_MODELS = ("AE", "BetaTCVAE", "FactorVAE")
SLOW_MODELS = ("VAE", "ProVLAE", "ProLVAE", "COFHAE", "AE-boxhead")
FAST_ESTIMATORS = ("mss",)  # its weights depend on where a replica's rows lie
SLOW_ESTIMATORS = ("mws",)
#: tolerances on the weight changes of a few SGD steps: the deterministic AE differs
#: only by float summation order; the others draw the same noise on both sides too,
#: but pass it through more (discriminators, the M x M pair densities, batch
#: statistics synchronised in another arithmetic)
TOLERANCE = {"AE": 1e-5}
DEFAULT_TOLERANCE = 1e-4


def _checks(*args, timeout=900) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen(
        [sys.executable, str(CHECKS), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )


def _result(process: subprocess.Popen, timeout=900) -> dict:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-4000:]
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fast_checks():
    return _result(_checks(*FAST_MODELS, "--estimators", *FAST_ESTIMATORS))


@pytest.fixture(scope="module")
def slow_checks():
    return _result(_checks(*SLOW_MODELS, "--estimators", *SLOW_ESTIMATORS))


def _assert_equal_training(name: str, check: dict):
    assert check["same_start"], name
    assert check["steps"][0] == check["steps"][1] >= 2, check["steps"]
    assert check["change"] > 0.1  # the steps moved the weights
    tolerance = TOLERANCE.get(name, DEFAULT_TOLERANCE)
    assert check["relative_difference"] < tolerance, check
    assert check["size_ratio"] == pytest.approx(1.0, abs=tolerance)
    single, mirrored = check["history_single"], check["history_mirrored"]
    assert set(single) == set(mirrored)
    for key, value in single.items():
        assert mirrored[key] == pytest.approx(value, rel=1e-4, abs=1e-5), key


@pytest.mark.parametrize("name", FAST_MODELS)
def test_two_replicas_train_like_one_device(fast_checks, name):
    assert fast_checks["replicas"] == 2
    _assert_equal_training(name, fast_checks["models"][name])


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW_MODELS)
def test_two_replicas_train_like_one_device_slow(slow_checks, name):
    assert slow_checks["replicas"] == 2
    _assert_equal_training(name, slow_checks["models"][name])


def _assert_equal_estimator(check: dict):
    for term, value in check["single"].items():
        assert check["mirrored"][term] == pytest.approx(value, rel=1e-5, abs=1e-5), term
    assert check["gradient_difference"] < 1e-5 * check["gradient_size"]


@pytest.mark.parametrize("estimator", FAST_ESTIMATORS)
def test_beta_tcvae_estimator_on_gathered_posteriors_equals_one_device(fast_checks, estimator):
    _assert_equal_estimator(fast_checks["estimator"][estimator])


@pytest.mark.slow
@pytest.mark.parametrize("estimator", SLOW_ESTIMATORS)
def test_beta_tcvae_estimator_on_gathered_posteriors_equals_one_device_slow(slow_checks, estimator):
    _assert_equal_estimator(slow_checks["estimator"][estimator])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_workers_train_like_one_device():
    """MultiWorkerMirroredStrategy: two processes on this machine, one CPU each."""
    ports = [str(_free_port()), str(_free_port())]
    workers = [_checks("--worker", str(i), *ports, "AE", "BetaTCVAE", "FactorVAE") for i in (1, 0)]
    chief = _result(workers[1])
    workers[0].communicate(timeout=120)
    assert workers[0].returncode == 0
    assert chief["replicas"] == 2
    for name in ("AE", "BetaTCVAE", "FactorVAE"):
        _assert_equal_training(name, chief["models"][name])


# ------------------------------------------------------------- in this process
def test_shares_of_a_batch_add_up_to_the_whole_decomposition():
    """tc_decomposition on row shares (posteriors of the whole batch given) weighted
    by their sizes equals the whole batch's terms, and so do the gradients."""
    rng = np.random.default_rng(2)
    z, mean, logvar = (tf.constant(rng.normal(size=(9, 4)), tf.float32) for _ in range(3))
    for estimator in losses.ESTIMATORS:
        with tf.GradientTape() as tape:
            tape.watch([z, mean, logvar])
            whole = losses.tc_decomposition(z, mean, logvar, 40, estimator)
            whole_sum = whole["mi"] + 2.0 * whole["tc"] - whole["dwkl"]
        grads_whole = tape.gradient(whole_sum, [z, mean, logvar])
        with tf.GradientTape() as tape:
            tape.watch([z, mean, logvar])
            total = {k: 0.0 for k in whole}
            for lo, hi in [(0, 4), (4, 5), (5, 9)]:
                part = losses.tc_decomposition(
                    z[lo:hi], mean[lo:hi], logvar[lo:hi], 40, estimator, batch=(mean, logvar), offset=lo
                )
                total = {k: total[k] + part[k] * (hi - lo) / 9 for k in total}
            shares_sum = total["mi"] + 2.0 * total["tc"] - total["dwkl"]
        grads_shares = tape.gradient(shares_sum, [z, mean, logvar])
        for key in whole:
            np.testing.assert_allclose(float(total[key]), float(whole[key]), rtol=1e-5, atol=1e-5)
        for a, b in zip(grads_whole, grads_shares):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-6)


def test_decomposition_refuses_a_bad_batch():
    z = tf.zeros((3, 2))
    with pytest.raises(ValueError, match="batch must be a"):
        losses.tc_decomposition(z, z, z, batch=z)


def test_strategy_names():
    assert distribute.get_strategy(None) is None
    with pytest.raises(ValueError, match="strategy must be one of"):
        distribute.get_strategy("tpu")
    strategy = distribute.get_strategy("mirrored")
    assert distribute.get_strategy("mirrored") is strategy  # created once per process
    assert distribute.is_chief(strategy) and distribute.is_chief(None)


class _Resolver:
    def __init__(self, cluster, task_type, task_id):
        self.task_type, self.task_id = task_type, task_id
        self._spec = tf.train.ClusterSpec(cluster)

    def cluster_spec(self):
        return self._spec


class _Cluster:
    def __init__(self, cluster, task_type, task_id):
        self.cluster_resolver = _Resolver(cluster, task_type, task_id)


def test_the_chief_of_a_cluster_writes():
    workers = {"worker": ["a:1", "b:1"]}
    assert distribute.is_chief(_Cluster(workers, "worker", 0))
    assert not distribute.is_chief(_Cluster(workers, "worker", 1))
    with_chief = {"chief": ["c:1"], **workers}
    assert distribute.is_chief(_Cluster(with_chief, "chief", 0))
    assert not distribute.is_chief(_Cluster(with_chief, "worker", 0))
    assert distribute.is_chief(_Cluster({}, None, None))


def test_one_device_needs_no_share():
    assert distribute.batch_share(8) is None
    x = tf.ones((3, 2))
    assert distribute.gather_rows(x, None) is x and distribute.local_rows(x, None) is x
    assert distribute.step_outputs({"loss": tf.constant(1.0)}, tf.distribute.get_strategy())["loss"].shape == ()


def test_a_model_built_outside_the_scope_is_refused():
    model = hier_models.AE((6,), latent_dim=2, hidden_units=(4,), random_state=0)
    with distribute.get_strategy("mirrored").scope():
        with pytest.raises(ValueError, match=r"build the model inside strategy.scope\(\)"):
            model.compile()


def test_optimisers_are_recreated_in_the_model_scope():
    strategy = distribute.get_strategy("mirrored")
    main_optimizer = keras.optimizers.SGD(0.25)
    with strategy.scope():
        model = hier_models.FactorVAE((6,), latent_dim=2, hidden_units=(4,), discriminator_units=(4,), random_state=0)
    model.compile(optimizer=main_optimizer, discriminator_optimizer=keras.optimizers.Adam(0.5))
    assert model.optimizer is not main_optimizer
    assert model.optimizer.get_config()["learning_rate"] == 0.25
    assert model.discriminator_optimizer.get_config()["learning_rate"] == 0.5
    for optimizer in (model.optimizer, model.discriminator_optimizer):
        assert optimizer._distribution_strategy is strategy
    x = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")
    history = model.fit(x, batch_size=4, epochs=1, verbose=0).history
    assert model.step == 2 and np.isfinite(history["loss"][0])
    used = keras.optimizers.SGD(0.1)
    used.build([keras.Variable(np.zeros(2, "float32"))])
    with strategy.scope():
        other = hier_models.AE((6,), latent_dim=2, hidden_units=(4,), random_state=0)
    with pytest.raises(ValueError, match="optimizer was created and used outside"):
        other.compile(optimizer=used)


def test_cli_trains_under_a_strategy(cli_data_dir, tmp_path, capsys):
    out = tmp_path / "ae"
    code = main(["train", "--dataset", CLI_DATASET, "--model", "AE", "--epochs", "1", "--batch-size", "100",
                 "--strategy", "mirrored", "--data-dir", cli_data_dir, "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    record = json.loads((out / "history.json").read_text())
    assert record["settings"]["strategy"] == "mirrored" and record["settings"]["replicas"] >= 1
    assert (out / "model.keras").is_file()
    with pytest.raises(SystemExit):
        main(["train", "--dataset", CLI_DATASET, "--model", "AE", "--strategy", "tpu", "--out", str(out)])
    assert "invalid choice: 'tpu'" in capsys.readouterr().err
