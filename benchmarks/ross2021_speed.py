"""Where the time of one paper-scale Ross & Doshi-Velez run goes, and how much the
bfloat16 discriminators save.

One run of ``python -m benchmarks.ross2021`` on a Chopsticks config trains, for 50 epochs of
90,000 series at batch 256 (17,600 steps each), the smooth autoencoder, COFHAE (with
its 3 x 1000 discriminator), and the baselines AE, beta-TCVAE and FactorVAE (6 x 1000
discriminator), and runs MIMOSA once. This benchmark times ``--steps`` training steps
of each model on the real data, in alternating windows, with the discriminators in
float32 (the run as it was) and in bfloat16 (``discriminator_dtype="mixed_bfloat16"``),
times MIMOSA on 90,000 smooth-autoencoder codes, and extrapolates to the whole run.

    python -m benchmarks.ross2021_speed            # results in docs/results/ross2021_speed.{json,md}
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path

import numpy as np

import hier_datasets
from benchmarks.study import RESULTS
from hier_models import AE, COFHAE, BetaTCVAE, FactorVAE, mimosa
from hier_models.cofhae import targets_from_factors
from hier_models.training import paper_learning_rate, training_dataset

DATASET = "chopsticks/depth2_either"
TRAIN_SIZE, EPOCHS, BATCH = 90_000, 50, 256
CODES = f"{DATASET.replace('/', '-')}-n{TRAIN_SIZE}-e{EPOCHS}-s0.codes.npy"


def models(hierarchy, width: int, dtype):
    """The run's trained models (name -> constructor), discriminators in ``dtype``."""
    return {
        "smooth AE": lambda: AE((64,), latent_dim=4, activation="softplus", random_state=0),
        "COFHAE": lambda: COFHAE((64,), hierarchy, discriminator_dtype=dtype, random_state=0),
        "AE": lambda: AE((64,), latent_dim=width, random_state=0),
        "BetaTCVAE": lambda: BetaTCVAE((64,), latent_dim=width, beta=5.0, random_state=0),
        "FactorVAE": lambda: FactorVAE((64,), latent_dim=width, gamma=10.0, discriminator_dtype=dtype, random_state=0),
    }


def seconds_per_step(build, data, steps: int, **compile_options) -> float:
    """Seconds per training step of a fresh model, after one warm-up window (tracing);
    ``compile_options`` (e.g. ``steps_per_execution``) go to ``compile``."""
    import keras

    model = build()
    model.compile(optimizer=keras.optimizers.Adam(paper_learning_rate(10 * steps)), **compile_options)
    model.fit(data.take(steps // 4), verbose=0)
    start = time.perf_counter()
    model.fit(data.take(steps), verbose=0)
    return (time.perf_counter() - start) / steps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=120, help="timed steps per model and window")
    parser.add_argument("--windows", type=int, default=2, help="alternating windows per setting")
    parser.add_argument("--out", type=Path, default=RESULTS / "ross2021_speed.json")
    parser.add_argument("--codes", type=Path, default=Path("runs/ross2021-cache") / CODES,
                        help="the smooth autoencoder's codes, as python -m benchmarks.ross2021 caches them")
    args = parser.parse_args(argv)
    if not args.codes.is_file():
        parser.error(f"no smooth-autoencoder codes at {args.codes}: run python -m benchmarks.ross2021 on {DATASET} first")
    codes = np.load(args.codes)
    gt = hier_datasets.ground_truth(DATASET)
    factors, series = gt.sample(TRAIN_SIZE, 0)
    targets = targets_from_factors(gt.hierarchy, factors)
    plain = training_dataset(series, None, BATCH, 0).repeat()
    paired = training_dataset(series, targets, BATCH, 0).repeat()
    steps_per_run = math.ceil(TRAIN_SIZE / BATCH) * EPOCHS
    timings: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.windows):
        for label, dtype in (("float32", None), ("bfloat16", "mixed_bfloat16")):
            for name, build in models(gt.hierarchy, gt.hierarchy.num_dims, dtype).items():
                if label == "bfloat16" and name not in ("COFHAE", "FactorVAE"):
                    continue  # no discriminator: the same model
                data = paired if name == "COFHAE" else plain
                timings.setdefault(name, {}).setdefault(label, []).append(seconds_per_step(build, data, args.steps))
                print(name, label, f"{timings[name][label][-1] * 1e3:.1f} ms/step", flush=True)
    start = time.perf_counter()
    mimosa(codes)
    mimosa_seconds = time.perf_counter() - start
    rows, totals = [], {"float32": mimosa_seconds, "bfloat16": mimosa_seconds}
    for name, by_label in timings.items():
        before = min(by_label["float32"])
        after = min(by_label.get("bfloat16", by_label["float32"]))
        rows.append({"stage": name, "ms_per_step_before": 1e3 * before, "ms_per_step_after": 1e3 * after,
                     "run_minutes_before": before * steps_per_run / 60, "run_minutes_after": after * steps_per_run / 60,
                     "speed_up": before / after})
        totals["float32"] += before * steps_per_run
        totals["bfloat16"] += after * steps_per_run
    rows.append({"stage": "MIMOSA (90,000 codes)", "run_minutes_before": mimosa_seconds / 60,
                 "run_minutes_after": mimosa_seconds / 60, "speed_up": 1.0})
    result = {"dataset": DATASET, "train_size": TRAIN_SIZE, "epochs": EPOCHS, "batch_size": BATCH,
              "steps_per_model": steps_per_run, "timed_steps": args.steps, "windows": args.windows,
              "machine": platform.processor() or platform.machine(), "stages": rows,
              "run_minutes_before": totals["float32"] / 60, "run_minutes_after": totals["bfloat16"] / 60,
              "speed_up": totals["float32"] / totals["bfloat16"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "# One paper-scale Ross & Doshi-Velez run: where the time goes",
        "",
        f"`python -m benchmarks.ross2021_speed`: {DATASET}, {TRAIN_SIZE:,} series, {EPOCHS} epochs of batch "
        f"{BATCH} ({steps_per_run:,} steps per model); each model timed over {args.steps} steps in "
        f"{args.windows} alternating windows (best kept), extrapolated to the whole run. Before: every "
        "network in float32; after: the discriminators of COFHAE and FactorVAE in bfloat16 "
        "(`discriminator_dtype=\"mixed_bfloat16\"`), everything else unchanged.",
        "",
        "| stage | ms/step before | ms/step after | minutes per run before | after | speed-up |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ms = (f"{r['ms_per_step_before']:.1f} | {r['ms_per_step_after']:.1f}" if "ms_per_step_before" in r
              else "- | -")
        lines.append(f"| {r['stage']} | {ms} | {r['run_minutes_before']:.1f} | {r['run_minutes_after']:.1f} | "
                     f"{r['speed_up']:.2f}x |")
    lines.append(f"| **whole run** | | | **{result['run_minutes_before']:.0f}** | **{result['run_minutes_after']:.0f}** "
                 f"| **{result['speed_up']:.2f}x** |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
