"""The paper's selection protocol for one restart, timed against the full grid.

Ross & Doshi-Velez (2021, appendix A.1) train COFHAE at all 27 points of their grid
(tau x lambda_assign x lambda_tc) for 50 epochs and keep one by their rule. This
benchmark, in one run on one Chopsticks config and restart:

1. times ``--timing-steps`` training steps of each of the 27 configurations at the
   paper's setting (3 x 1000 discriminator on every row, float32 unless the CPU has
   native bfloat16) and extrapolates the sequential full grid (27 x 50 epochs of
   steps; the per-run evaluation passes and graph tracing are left out, so the
   estimate is a lower bound);
2. runs the protocol as the study does (``COFHAE-SH`` of ``ross2021.py``: successive
   halving over the same grid, with the study's discriminator setting) and measures its
   wall-clock time, evaluation and tracing included, and the selected model's R4c;
3. reports both and their ratio in ``docs/results/selection_speed.{json,md}``. The
   run's record is also added to ``ross2021.json`` (as one restart of the study) when
   that file has none of the same key.

    python -m benchmarks.selection_speed --discriminator-units 256
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

from benchmarks.ross2021 import SELECTED, Study, as_float, key
from benchmarks.ross2021_speed import seconds_per_step
from benchmarks.study import NOTES_MARK, RESULTS, append_record, kept_notes, load_records, machine
from hier_models import COFHAE
from hier_models.cofhae import targets_from_assignments
from hier_models.hierarchical import PAPER_GRID, grid_points
from hier_models.training import training_dataset


def paper_ms_per_step(study: Study, name: str, seed: int, steps: int) -> list[float]:
    """Milliseconds per training step of each grid point at the paper's setting
    (:func:`benchmarks.ross2021_speed.seconds_per_step`: after a warm-up, on the
    restart's MIMOSA targets)."""
    (_, x), _ = study.data(name)
    hierarchy, assignments, _ = study.cached_mimosa(name, seed)
    data = training_dataset(as_float(x), targets_from_assignments(hierarchy, assignments), study.args.batch_size,
                            seed).repeat()
    return [1000 * seconds_per_step(partial(COFHAE, x.shape[1:], hierarchy, discriminator_dtype=study.discriminator_dtype,
                                            random_state=seed, **point), data, steps)
            for point in grid_points(PAPER_GRID)]


def result_options(argv: list[str]) -> str:
    """The command line's options that decide the result (not where files go)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg.split("=")[0] in ("--cache", "--out", "--study-out"):
            skip = "=" not in arg
        else:
            kept.append(arg)
    return " ".join(kept)


def render(report: dict, page: Path) -> None:
    grid, protocol = report["full_grid"], report["protocol"]
    lines = [
        "# The paper's selection protocol, one restart: successive halving against the full grid",
        "",
        f"`python -m benchmarks.selection_speed {report['command']}` on {report['dataset']}, restart "
        f"{report['seed']}, {report['train_size']:,} training series, {report['machine']['cpu']} "
        f"({report['machine']['cores']} cores). Both in one run.",
        "",
        "| | configurations x epochs | discriminator | ms / step | minutes |",
        "|---|---|---|---:|---:|",
        f"| full grid, sequential (estimated from {grid['timing_steps']} timed steps of each of the 27 points; "
        f"tracing and evaluation left out) | 27 x {report['epochs']} | 3 x 1000, every row | "
        f"{np.mean(grid['ms_per_step']):.1f} ± {np.std(grid['ms_per_step'], ddof=1):.1f} | {grid['minutes']:.0f} |",
        f"| selection protocol: successive halving, rungs {protocol['rungs']} (measured wall clock / steps, "
        "tracing and evaluation included) | "
        f"{' + '.join(protocol['configurations_per_rung'])} | {protocol['discriminator']} | "
        f"{protocol['ms_per_step']:.1f} | {protocol['minutes']:.1f} |",
        "",
        f"Ratio, full grid at the paper's setting / protocol: **{report['ratio']:.1f}x** "
        f"(target: one restart in at most 40 minutes on two cores: {'met' if protocol['minutes'] <= 40 else 'not met'}).",
        f"Selected: {protocol['chosen']} (grid index {protocol['choice']}); its R4c on the test split "
        f"{protocol['r4c']:.3f}.",
        "",
        "One-minute load average before and after: " + (
            f"{report['load_average'][0]:.1f} and {report['load_average'][1]:.1f} (2 is both cores busy)."
            if "load_average" in report else "not recorded."),
        "",
        NOTES_MARK,
    ]
    page.write_text("\n".join(lines) + kept_notes(page))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="chopsticks/depth2_either")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rungs", type=int, nargs="+", default=[3, 10, 50])
    parser.add_argument("--discriminator-units", type=int, default=None, help="the protocol's (default 1000)")
    parser.add_argument("--tc-rows", type=int, default=None, help="the protocol's (default every row)")
    parser.add_argument("--timing-steps", type=int, default=40)
    parser.add_argument("--cache", default="runs/ross2021-cache", help="smooth-autoencoder codes and MIMOSA output")
    parser.add_argument("--out", type=Path, default=RESULTS / "selection_speed.json")
    parser.add_argument("--study-out", type=Path, default=RESULTS / "ross2021.json")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--train-size", type=int, default=None, help="default: the registered split (a smaller one "
                        "is for trying the benchmark out; the page says which was used)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    study = Study.configured(
        cache=args.cache, train_size=args.train_size, epochs=args.rungs[-1], quiet=args.quiet, rungs=args.rungs,
        discriminator_units=args.discriminator_units, tc_rows=args.tc_rows)
    study.cached_mimosa(args.dataset, args.seed)  # before anything is timed
    load_before = os.getloadavg()[0]
    ms = paper_ms_per_step(study, args.dataset, args.seed, args.timing_steps)
    (_, x), _ = study.data(args.dataset)
    steps_per_run = math.ceil(len(x) / 256) * args.rungs[-1]
    start = time.perf_counter()
    record = study.run_model(args.dataset, SELECTED, args.seed)
    minutes = (time.perf_counter() - start) / 60
    if key(record) not in {key(r) for r in load_records(args.study_out)}:
        append_record(args.study_out, record)
    grid_minutes = sum(ms) * steps_per_run / 60_000
    rungs = record["selection"]["rungs"]
    options = study.discriminator_options()
    report = {
        "command": result_options(argv), "train_size": len(x), "load_average": [load_before, os.getloadavg()[0]],
        "dataset": args.dataset, "seed": args.seed, "epochs": args.rungs[-1], "machine": machine(),
        "full_grid": {"timing_steps": args.timing_steps, "ms_per_step": ms, "minutes": grid_minutes},
        "protocol": {
            "rungs": args.rungs, "configurations_per_rung": [f"{len(r['configurations'])} x {r['epochs']}" for r in rungs],
            "discriminator": f"3 x {options['discriminator_units'][0]}, "
                             + (f"{args.tc_rows} rows" if args.tc_rows else "every row"),
            "steps": record["steps"], "ms_per_step": 1000 * record["seconds"] / record["steps"],
            "minutes": minutes, "chosen": record["selection"]["chosen"], "choice": record["selection"]["choice"],
            "r4c": record["r4c"],
        },
    }
    report["ratio"] = grid_minutes / minutes
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    render(report, args.out.with_suffix(".md"))
    print(f"full grid ~{grid_minutes:.0f} min, protocol {minutes:.1f} min: {report['ratio']:.1f}x", flush=True)


if __name__ == "__main__":
    main()
