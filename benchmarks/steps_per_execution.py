"""Several training steps per call: milliseconds per step and the weights, side by side.

Keras's ``steps_per_execution`` (a ``compile`` option) runs that many training steps
inside one traced call, so the Python and dispatch overhead of a call is paid once per
that many steps. A step of the Ross & Doshi-Velez study is short on two CPU cores
(about 10 ms for COFHAE with the study's 3 x 256 bfloat16 discriminator), so that
overhead is a sizeable part of it. In one run, for each model the study trains on a
Chopsticks config, this benchmark

1. times ``--steps`` training steps of a fresh seeded model at each setting of
   ``--settings``, in ``--windows`` alternating windows after a warm-up (the best
   window is kept, as in ``ross2021_speed.py``), and reports each setting's ratio to
   one step per call;
2. checks, in the first window, that each setting trains the model to the same weights,
   bit for bit, as one step per call does after the same steps on the same batches.

    python -m benchmarks.steps_per_execution         # docs/results/steps_per_execution.{json,md}
"""
from __future__ import annotations

import argparse
import json
import math
import os
from functools import partial
from pathlib import Path

import keras
import numpy as np

import hier_datasets
from benchmarks.ross2021_speed import BATCH, DATASET, EPOCHS, TRAIN_SIZE, models, seconds_per_step
from benchmarks.study import NOTES_MARK, RESULTS, kept_notes, machine
from hier_models import COFHAE
from hier_models.cofhae import targets_from_factors
from hier_models.training import training_dataset

#: the study's COFHAE (``--discriminator-units 256``: 3 x 256, bfloat16)
STUDY_COFHAE = "COFHAE (3 x 256 discriminator)"


def study_models(hierarchy) -> dict:
    """Name -> constructor of each model a study run trains, discriminators in bfloat16."""
    built = models(hierarchy, hierarchy.num_dims, "mixed_bfloat16")
    built[STUDY_COFHAE] = lambda: COFHAE((64,), hierarchy, discriminator_units=(256,) * 3,
                                         discriminator_dtype="mixed_bfloat16", random_state=0)
    del built["COFHAE"]  # the paper's 3 x 1000 width, which the study does not train
    return built


def timed(build, data, steps: int, setting: int) -> tuple[float, list[np.ndarray]]:
    """Milliseconds per step of a fresh model at ``steps_per_execution=setting`` on a fresh
    ``data()`` (the same batches every call), and its weights after the warm-up and the
    timed steps."""
    keras.utils.set_random_seed(0)  # the global half of the shuffling's seed, and the model's draws
    batches = data().repeat()
    model = build()
    ms = 1000 * seconds_per_step(lambda: model, batches, steps, steps_per_execution=setting)
    return ms, model.get_weights()


def measure(settings: list[int], steps: int, windows: int) -> dict:
    gt = hier_datasets.ground_truth(DATASET)
    factors, series = gt.sample(TRAIN_SIZE, 0)
    targets = targets_from_factors(gt.hierarchy, factors)
    ms: dict[str, dict[int, list[float]]] = {}
    identical: dict[str, dict[int, bool]] = {}
    for window in range(windows):
        for name, build in study_models(gt.hierarchy).items():
            data = partial(training_dataset, series, targets if name == STUDY_COFHAE else None, BATCH, 0)
            reference = None
            for setting in settings:
                value, weights = timed(build, data, steps, setting)
                ms.setdefault(name, {}).setdefault(setting, []).append(value)
                if window == 0:
                    reference = weights if reference is None else reference
                    identical.setdefault(name, {})[setting] = all(
                        np.array_equal(a, b) for a, b in zip(reference, weights, strict=True))
                print(f"{name}, {setting} per call: {value:.1f} ms/step", flush=True)
    return {"dataset": DATASET, "batch_size": BATCH, "timed_steps": steps, "windows": windows,
            "settings": settings, "machine": machine(), "load_average": os.getloadavg()[0],
            "ms_per_step": {n: {str(s): v for s, v in by.items()} for n, by in ms.items()},
            "identical_weights": {n: {str(s): v for s, v in by.items()} for n, by in identical.items()}}


def render(result: dict) -> list[str]:
    settings, steps_per_run = result["settings"], math.ceil(TRAIN_SIZE / BATCH) * EPOCHS
    head = " | ".join(f"{s} per call: ms / step (ratio to 1)" for s in settings)
    lines = [
        "# Several training steps per call (`steps_per_execution`)",
        "",
        f"`python -m benchmarks.steps_per_execution`: {result['dataset']}, batch {result['batch_size']}, "
        f"{result['machine']['cpu']} ({result['machine']['cores']} cores); each model timed over "
        f"{result['timed_steps']} steps at every setting, in {result['windows']} alternating windows after a "
        "warm-up (best window). Discriminators in bfloat16, as the study trains them. "
        f"One-minute load average at the end: {result['load_average']:.1f} (2 = both cores busy).",
        "",
        f"| model | {head} | same weights as 1 per call | minutes per 50-epoch run, 1 -> {settings[-1]} per call |",
        "|---|" + "---:|" * len(settings) + "---|---:|",
    ]
    for name, by in result["ms_per_step"].items():
        best = {s: min(by[str(s)]) for s in settings}
        cells = " | ".join(f"{best[s]:.1f} ({best[settings[0]] / best[s]:.2f}x)" for s in settings)
        same = ", ".join(f"{s}: {'yes' if result['identical_weights'][name][str(s)] else 'NO'}" for s in settings[1:])
        lines.append(f"| {name} | {cells} | {same} | {best[settings[0]] * steps_per_run / 60e3:.1f} -> "
                     f"{best[settings[-1]] * steps_per_run / 60e3:.1f} |")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", type=int, nargs="+", default=[1, 8, 32],
                        help="steps per call to compare; the first is the baseline")
    parser.add_argument("--steps", type=int, default=192, help="timed steps per model, setting and window")
    parser.add_argument("--windows", type=int, default=3, help="alternating windows per setting")
    parser.add_argument("--out", type=Path, default=RESULTS / "steps_per_execution.json")
    parser.add_argument("--render", action="store_true", help="only redraw the page from the results file")
    args = parser.parse_args(argv)
    if any(s < 1 for s in args.settings):
        parser.error(f"--settings must be positive step counts, got {args.settings}")
    if args.render:
        result = json.loads(args.out.read_text())
    else:
        result = measure(args.settings, args.steps, args.windows)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    page = args.out.with_suffix(".md")
    lines = render(result)
    page.write_text("\n".join(lines) + "\n\n" + NOTES_MARK + kept_notes(page))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
