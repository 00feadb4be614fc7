"""Does successive halving choose what the full grid would? One restart, both ways.

For one dataset and restart, every configuration of the paper's 27-point COFHAE grid
(appendix A.1) trains for the full 50 epochs on that restart's smooth-autoencoder codes
and MIMOSA output (the cache of ``benchmarks.ross2021``), each seeded as successive
halving seeds it, so that a configuration that survives to the last rung is the same
run either way. One record per configuration is appended as it finishes (the grid
resumes where it stopped). The page applies the paper's rule
(:func:`hier_models.selection.rule_ranking`; the third of the whole grid is eligible,
also while the grid is incomplete) to the grid's training losses and puts
its choice beside the choice of the ``COFHAE-SH`` record of the same restart and
setting in ``ross2021.json`` (``python -m benchmarks.ross2021 --models COFHAE-SH``), with
both choices' test R4c and every configuration's losses and R4c.

    python -m benchmarks.selection_check --dataset chopsticks/depth2_either --seed 0 --discriminator-units 256
"""
from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from pathlib import Path

import numpy as np

import hier_datasets
from benchmarks.cofhae_ablation import test_scores
from benchmarks.ross2021 import SELECTED, Study, as_float, assignments_id, dtype_label
from benchmarks.study import NOTES_MARK, RESULTS, append_record, kept_notes, load_records, machine
from hier_models.hierarchical import PAPER_GRID, grid_label, grid_points, train_cofhae
from hier_models.selection import rule_ranking


def same_setting(record: dict, study: Study, args) -> bool:
    """Whether ``record`` is of this restart, training size and discriminator setting."""
    return (record["dataset"], record["seed"], record["train_size"], record.get("discriminator_units"),
            record.get("tc_rows")) == (args.dataset, args.seed, study.sizes(args.dataset)[0],
                                       study.discriminator_options()["discriminator_units"], args.tc_rows)


def run_point(study: Study, args, point: dict) -> dict:
    (_, train_x), (test_f, test_x) = study.data(args.dataset)
    gt = hier_datasets.ground_truth(args.dataset)
    hierarchy, assignments, _ = study.cached_mimosa(args.dataset, args.seed)
    options = study.discriminator_options()
    start = time.perf_counter()
    fit = train_cofhae(as_float(train_x), hierarchy, assignments, epochs=args.epochs, batch_size=256,
                       random_state=args.seed, callbacks=study.progress(grid_label(point)), **point, **options)
    seconds = time.perf_counter() - start
    scores = test_scores(gt, test_f, fit.model.encode(as_float(test_x)), hierarchy, args.seed)
    return {"dataset": args.dataset, "seed": args.seed, "train_size": len(train_x), "configuration": grid_label(point),
            "point": point,
            "discriminator_units": options["discriminator_units"], "tc_rows": args.tc_rows,
            "discriminator_dtype": dtype_label(options["discriminator_dtype"]), "epochs": args.epochs,
            "reconstruction": fit.reconstruction, "assignment_loss": fit.assignment_loss,
            "r4c": scores["r4c"], "r4": scores["r4"], "mimosa_assignments": assignments_id(assignments), "seconds": seconds,
            "steps": math.ceil(len(train_x) / 256) * args.epochs, "machine": machine()}


def render(study: Study, args, out: Path) -> None:
    runs = [r for r in load_records(out) if same_setting(r, study, args)]
    halving = [r for r in load_records(args.study_out) if r["model"] == SELECTED and r["epochs"] == args.epochs
               and same_setting(r, study, args)]
    width = study.discriminator_options()["discriminator_units"][0]
    grid_size = len(grid_points(PAPER_GRID))
    lines = [
        f"# Successive halving against the full grid: {args.dataset}, restart {args.seed}",
        "",
        f"`python -m benchmarks.selection_check --dataset {args.dataset} --seed {args.seed}"
        + (f" --discriminator-units {width}" if args.discriminator_units else "") + "`: "
        f"{len(runs)} of {grid_size} configurations trained for {args.epochs} epochs "
        f"(discriminator 3 x {width}). Best first by the paper's rule over the grid's training losses.",
        "",
    ]
    if runs:
        ranked = rule_ranking([r["reconstruction"] for r in runs], [r["assignment_loss"] for r in runs],
                              eligible=max(1, grid_size // 3))
        grid_choice = runs[ranked[0]]  # the rule over the whole grid's third, also while the grid is incomplete
        sh_choice = halving[0]["selection"]["chosen"] if halving else None
        complete = len(runs) == grid_size
        lines += [
            f"Full grid's choice{'' if complete else ' so far (the grid is incomplete)'}: "
            f"{grid_choice['configuration']}, R4c {grid_choice['r4c']:.3f}. "
            + (f"Successive halving's choice: {grid_label(sh_choice)}, R4c {halving[0]['r4c']:.3f}."
               if halving else "Successive halving has no record of this restart and setting yet."),
            "",
            "| configuration | L_x (training) | L_a (training) | R4c (test) | R4 (test) | minutes | |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for i in ranked:
            r = runs[i]
            marks = [m for m, hit in (("grid's choice", r is grid_choice),
                                      ("halving's choice", sh_choice is not None and r["point"] == sh_choice)) if hit]
            lines.append(f"| {r['configuration']} | {r['reconstruction']:.3f} | {r['assignment_loss']:.2e} | "
                         f"{r['r4c']:.3f} | {r['r4']:.3f} | {r['seconds'] / 60:.1f} | {', '.join(marks)} |")
        lines += ["", f"R4c over the grid: {np.min([r['r4c'] for r in runs]):.3f} to {np.max([r['r4c'] for r in runs]):.3f}.",
                  ""]
        targets = Counter(r.get("mimosa_assignments", "not recorded") for r in runs + halving[:1])
        if len(targets) > 1:
            lines += ["MIMOSA assignments (fingerprint: runs, successive halving's included): "
                      + ", ".join(f"{k}: {n}" for k, n in targets.items())
                      + "; runs on different ones trained on different targets.", ""]
    page = out.with_name(f"{out.stem}_{args.dataset.replace('/', '-')}_s{args.seed}_w{width}.md")
    page.write_text("\n".join(lines + [NOTES_MARK]) + kept_notes(page))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="chopsticks/depth2_either")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--discriminator-units", type=int, default=None, help="width of its 3 layers (default 1000)")
    parser.add_argument("--tc-rows", type=int, default=None, help="rows for the TC term (default every row)")
    parser.add_argument("--train-size", type=int, default=None, help="default: the registered split (a smaller one "
                        "is for trying the study out; records keep it)")
    parser.add_argument("--cache", default="runs/ross2021-cache", help="smooth-autoencoder codes and MIMOSA output")
    parser.add_argument("--out", type=Path, default=RESULTS / "selection_check.json")
    parser.add_argument("--study-out", type=Path, default=RESULTS / "ross2021.json")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--render", action="store_true", help="only redraw the page")
    args = parser.parse_args(argv)
    study = Study.configured(
        cache=args.cache, train_size=args.train_size, epochs=args.epochs, quiet=args.quiet, rungs=[args.epochs],
        discriminator_units=args.discriminator_units, tc_rows=args.tc_rows, interventional_points=0)
    records = load_records(args.out)
    if args.render and not any(same_setting(r, study, args) for r in records):
        recorded = sorted({f"--dataset {r['dataset']} --seed {r['seed']} --discriminator-units "
                           f"{r['discriminator_units'][0]}" for r in records})
        parser.error(f"{args.out} has no record of this dataset, restart and setting, so there is no page to "
                     f"redraw; its records are of: {'; '.join(recorded) or 'nothing yet'}")
    if not args.render:
        done = {r["configuration"] for r in records if same_setting(r, study, args)}
        for point in grid_points(PAPER_GRID):
            if grid_label(point) in done:
                continue
            record = run_point(study, args, point)
            append_record(args.out, record)
            render(study, args, args.out)
            print(f"{record['configuration']}: R4c {record['r4c']:.3f} in {record['seconds'] / 60:.1f} min", flush=True)
    render(study, args, args.out)


if __name__ == "__main__":
    main()
