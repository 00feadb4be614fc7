"""Training on two replicas against training on one device; run by test_distribute.py.

TensorFlow splits the CPU into logical devices only before it initialises its
devices, so these checks run in a fresh process and print one JSON object:

- ``python distribute_checks.py [MODEL ...] [--estimators NAME ...]``: for each
  model, the same initial weights take the same optimiser steps on the same global
  batches of 8 rows (the last one uneven: 5 rows split 3 + 2; for the AE 1 row, so
  one replica gets none; beta-TCVAE's batches split evenly, as its XLA kernel
  compiles once per batch shape) on one device and under a
  MirroredStrategy over two CPU devices; it reports the relative difference of the
  weight changes, their size ratio, the step counts and both histories. For each
  estimator, beta-TCVAE's terms and gradients on the posteriors gathered from two
  replicas against the single-device value;
- ``python distribute_checks.py --worker INDEX PORT PORT MODEL ...``: one of two
  workers of a MultiWorkerMirroredStrategy on this machine (``TF_CONFIG`` from the
  ports), one CPU device each; worker 0 prints the comparison.
"""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

WORKER = sys.argv[1:2] == ["--worker"]
if WORKER:  # before TensorFlow starts
    index, ports = int(sys.argv[2]), sys.argv[3:5]
    os.environ["TF_CONFIG"] = json.dumps(
        {"cluster": {"worker": [f"localhost:{p}" for p in ports]}, "task": {"type": "worker", "index": index}}
    )

import tensorflow as tf  # noqa: E402

if not WORKER:
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2
    )

import keras  # noqa: E402
import numpy as np  # noqa: E402

import hier_models  # noqa: E402
from hier_datasets.hierarchy import Categorical, Group, Hierarchy  # noqa: E402
from hier_models import losses  # noqa: E402
from hier_models.cofhae import targets_from_assignments  # noqa: E402

ROWS, BATCH, WIDTH = 21, 8, 12  # batches of 8, 8 and 5 rows
ROWS_OF = {"AE": 17, "BetaTCVAE": 16, "AE-boxhead": 12}
#: SGD's learning rate: the Boxhead networks' steps stay small, where batch statistics
#: synchronised as E[x^2] - E[x]^2 (rather than one device's two-pass moments) differ
#: from one device's by float rounding only (without synchronisation, by 10%)
LEARNING_RATE_OF = {"AE-boxhead": 1e-6}
HIERARCHY = Hierarchy(Group(("x",), Categorical("c", (("a", Group(("p",))), ("b", Group(("q", "r")))))))
BASE = dict(likelihood="gaussian", observation_std=1.0, random_state=3)
SMALL = dict(hidden_units=(16, 16))
LADDER = dict(latents_per_layer=2, hidden_units=(16,), fade_in_steps=1, beta_anneal_steps=2)
CASES = {
    "AE": (hier_models.AE, dict(latent_dim=3, **SMALL)),
    "VAE": (hier_models.VAE, dict(latent_dim=3, beta=2.0, **SMALL)),
    "BetaTCVAE": (hier_models.BetaTCVAE, dict(latent_dim=3, dataset_size=100, estimator="mss", beta=6.0, **SMALL)),
    "FactorVAE": (hier_models.FactorVAE, dict(latent_dim=3, gamma=20.0, discriminator_units=(16, 16), **SMALL)),
    "ProVLAE": (hier_models.ProVLAE, LADDER),
    "ProLVAE": (hier_models.ProLVAE, LADDER),
    "COFHAE": (hier_models.COFHAE, dict(hierarchy=HIERARCHY, discriminator_units=(16, 16), lambda_tc=20.0, **SMALL)),
    # the Boxhead networks' batch normalisation, synchronised across replicas
    "AE-boxhead": (hier_models.AE, dict(latent_dim=3, architecture="boxhead_small", input_shape=(64, 64, 3))),
}


def _data(name: str):
    rng = np.random.default_rng(0)
    shape = CASES[name][1].get("input_shape", (WIDTH,))
    x = rng.normal(size=(ROWS_OF.get(name, ROWS), *shape)).astype("float32")
    if name != "COFHAE":
        return tf.data.Dataset.from_tensor_slices(x).batch(BATCH)
    targets = targets_from_assignments(HIERARCHY, rng.integers(-1, HIERARCHY.num_paths, size=len(x)))
    return tf.data.Dataset.from_tensor_slices((x, targets.astype("float32"))).batch(BATCH)


def _model(name: str):
    cls, options = CASES[name]
    options = dict(options)
    hierarchy = options.pop("hierarchy", None)
    shape = options.pop("input_shape", (WIDTH,))
    args = (shape,) if hierarchy is None else (shape, hierarchy)
    model = cls(*args, **BASE, **options)
    extra = {"discriminator_optimizer": keras.optimizers.SGD(0.05)} if hasattr(model, "discriminator") else {}
    # created outside the strategy's scope on purpose: compile recreates it inside
    model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE_OF.get(name, 0.01)), **extra)
    return model


def compare_training(name: str, strategy) -> dict:
    keras.utils.set_random_seed(0)
    single = _model(name)
    with strategy.scope():
        keras.utils.set_random_seed(0)
        mirrored = _model(name)
    start = single.get_weights()
    same_start = all(np.array_equal(a, b) for a, b in zip(start, mirrored.get_weights()))
    history_single = single.fit(_data(name), epochs=1, verbose=0, shuffle=False).history
    history_mirrored = mirrored.fit(_data(name), epochs=1, verbose=0, shuffle=False).history
    change_single = np.concatenate([(w - s).ravel() for w, s in zip(single.get_weights(), start)])
    change_mirrored = np.concatenate([(w - s).ravel() for w, s in zip(mirrored.get_weights(), start)])
    size = float(np.linalg.norm(change_single))
    return {
        "same_start": same_start,
        "change": size,
        "relative_difference": float(np.linalg.norm(change_mirrored - change_single)) / size,
        "size_ratio": float(np.linalg.norm(change_mirrored)) / size,
        "steps": [single.step, mirrored.step],
        "history_single": {k: float(v[-1]) for k, v in history_single.items()},
        "history_mirrored": {k: float(v[-1]) for k, v in history_mirrored.items()},
    }


def compare_estimator(strategy, estimator: str) -> dict:
    """beta-TCVAE's terms and gradients on 2 replicas (7 + 4 rows) vs one device (11 rows)."""
    rng = np.random.default_rng(1)
    z, mean, logvar = (tf.constant(rng.normal(size=(11, 3)), tf.float32) for _ in range(3))
    model = hier_models.BetaTCVAE((WIDTH,), latent_dim=3, dataset_size=50, estimator=estimator, random_state=0)
    with tf.GradientTape() as tape:
        tape.watch([z, mean, logvar])
        whole = losses.tc_decomposition(z, mean, logvar, 50, estimator)
        objective = whole["mi"] + 2.0 * whole["tc"] + 3.0 * whole["dwkl"]
    grads_single = tape.gradient(objective, [z, mean, logvar])
    bounds = [(0, 7), (7, 11)]

    def rows(context):
        lo, hi = bounds[context.replica_id_in_sync_group]
        return z[lo:hi], mean[lo:hi], logvar[lo:hi]

    shares = strategy.experimental_distribute_values_from_function(rows)

    def step(share):
        z_r, mean_r, logvar_r = share
        with tf.GradientTape() as tape:
            tape.watch([z_r, mean_r, logvar_r])
            parts = model._decomposition(z_r, mean_r, logvar_r)
            weight = tf.cast(tf.shape(z_r)[0], tf.float32) / 11.0
            weighted = {k: v * weight for k, v in parts.items()}
            objective = weighted["mi"] + 2.0 * weighted["tc"] + 3.0 * weighted["dwkl"]
        return weighted, tape.gradient(objective, [z_r, mean_r, logvar_r])

    weighted, grads = strategy.run(step, args=(shares,))
    terms = {k: float(strategy.reduce("SUM", v, axis=None)) for k, v in weighted.items()}
    grads_mirrored = [tf.concat(strategy.experimental_local_results(g), axis=0) for g in grads]
    return {
        "single": {k: float(v) for k, v in whole.items()},
        "mirrored": terms,
        "gradient_difference": max(float(tf.reduce_max(tf.abs(a - b))) for a, b in zip(grads_single, grads_mirrored)),
        "gradient_size": max(float(tf.reduce_max(tf.abs(a))) for a in grads_single),
    }


def main(argv) -> dict:
    if WORKER:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        names, estimators = argv[4:], []
    else:
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        cut = argv.index("--estimators") if "--estimators" in argv else len(argv)
        names, estimators = argv[:cut], argv[cut + 1 :]
    result = {"replicas": strategy.num_replicas_in_sync, "models": {}, "estimator": {}}
    for name in names:
        result["models"][name] = compare_training(name, strategy)
    for estimator in estimators:
        result["estimator"][estimator] = compare_estimator(strategy, estimator)
    return result


if __name__ == "__main__":
    output = main(sys.argv[1:])
    if not WORKER or int(sys.argv[2]) == 0:
        print(json.dumps(output))
