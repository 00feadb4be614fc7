"""Which change moved COFHAE's R4c on depth-2 Chopsticks: an ablation over seeds.

COFHAE's R4c on depth-2 `either` / `both` was 0.968 / 0.976 before three changes
(``mimosa_cofhae.md``: seed 0, 90,000 fresh series, 50 epochs, float32 discriminator)
and 0.875 / 0.790 after them (``ross2021.md``). The changes, each a variant here:

- ``factorvae-adam``: the TC discriminator's optimiser back to FactorVAE's constant
  Adam(1e-4, beta 0.5 / 0.9) instead of Adam at the main learning rate and schedule;
- ``softmax-la``: the assignment loss L_a on each categorical's softmax instead of the
  masked probabilities a' of Algorithm 8 (``assignment_probabilities="softmax"``);
- ``float32-disc``: the discriminator in float32 instead of bfloat16;
- ``before``: all three reverted at once; ``paper``: none (the current defaults).

The discriminator's cost levers (it does ~97% of a COFHAE step's arithmetic at the
paper's 3 x 1000 width), each a variant whose R4c, training L_x and L_a and
milliseconds per step are compared with ``paper`` at the same precision:

- ``disc-256`` / ``disc-64``: three hidden layers of 256 / 64 instead of 1,000;
- ``tc-rows-64``: the TC penalty and the discriminator step on 64 of each batch's
  256 rows (``COFHAE(tc_rows=64)``).

bfloat16 (``float32-disc`` against ``paper`` on a machine with AVX512-BF16 or AMX) is
the fourth lever; on a CPU without native bfloat16 the study runs in float32.

Every variant of one seed trains on the same smooth-autoencoder codes and MIMOSA
output (the Ross & Doshi-Velez study's cache, ``ross2021.py``; the assignments'
fingerprint in each record, ``mimosa_assignments``, as in that study's) and is scored on two
test sets: the registered test split and 5,000 fresh series drawn as
``mimosa_cofhae.py`` drew them (``default_rng([seed, 1])``), so that the test split is
a fourth factor. Each finished run is appended to ``docs/results/cofhae_ablation.json``
and a rerun skips the runs already there; a run stopped part-way resumes at the epoch
it was on (its checkpoint in the cache, ``<stem>.ablation-<variant>-e<epochs>.backup/``,
kept through scoring).

    python -m benchmarks.cofhae_ablation                           # 3 seeds, 10 COFHAE epochs
    python -m benchmarks.cofhae_ablation --cofhae-epochs 50 --seeds 0 --variants paper before
"""
from __future__ import annotations

import argparse
import json
import math
from functools import partial
from pathlib import Path

import numpy as np

import hier_datasets
import hier_metrics
from benchmarks.ross2021 import Study, as_float, assignments_id, dtype_label
from benchmarks.ross2021_speed import seconds_per_step
from benchmarks.study import NOTES_MARK, RESULTS, append_record, kept_notes, load_records, machine, mean_std
from hier_models import COFHAE
from hier_models.adversarial import default_discriminator_optimizer
from hier_models.cofhae import targets_from_assignments
from hier_models.hierarchical import train_cofhae
from hier_models.training import ResumableFit, training_dataset

#: variant -> (COFHAE options, whether the discriminator uses FactorVAE's Adam)
VARIANTS = {
    "paper": ({}, False),
    "factorvae-adam": ({}, True),
    "softmax-la": ({"assignment_probabilities": "softmax"}, False),
    "float32-disc": ({"discriminator_dtype": None}, False),
    "before": ({"assignment_probabilities": "softmax", "discriminator_dtype": None}, True),
    "disc-256": ({"discriminator_units": (256,) * 3}, False),
    "disc-64": ({"discriminator_units": (64,) * 3}, False),
    "tc-rows-64": ({"tc_rows": 64}, False),
}


#: the discriminator's cost levers timed side by side (``--time-steps``): label -> COFHAE options
LEVERS = {
    "paper": {},
    "disc-256": VARIANTS["disc-256"][0],
    "disc-64": VARIANTS["disc-64"][0],
    "tc-rows-64": VARIANTS["tc-rows-64"][0],
    "paper, bfloat16": {"discriminator_dtype": "mixed_bfloat16"},
}


def time_levers(study: Study, name: str, seed: int, steps: int, windows: int) -> dict:
    """Milliseconds per COFHAE step of each lever (best of ``windows`` alternating
    windows of ``steps`` steps, after a warm-up), on restart ``seed``'s MIMOSA targets."""
    (_, x), _ = study.data(name)
    hierarchy, assignments, _ = study.cached_mimosa(name, seed)
    data = training_dataset(as_float(x), targets_from_assignments(hierarchy, assignments), study.args.batch_size,
                            seed).repeat()
    best: dict[str, float] = {}
    for _ in range(windows):
        for label, options in LEVERS.items():
            build = partial(COFHAE, x.shape[1:], hierarchy, random_state=seed, **{"discriminator_dtype": None, **options})
            ms = 1000 * seconds_per_step(build, data, steps)
            best[label] = min(ms, best.get(label, np.inf))
            print(f"{label}: {ms:.1f} ms/step", flush=True)
    return {"dataset": name, "seed": seed, "timed_steps": steps, "windows": windows, "machine": machine(),
            "ms_per_step": best}


def key(record: dict) -> tuple:
    return record["dataset"], record["variant"], record["seed"], record["cofhae_epochs"]


def test_scores(gt, factors, codes, hierarchy, seed: int) -> dict:
    r4c = hier_metrics.r4c(factors, codes, factor_active=gt.active(factors), code_hierarchy=hierarchy, random_state=seed)
    return {"r4c": r4c["score"], "r4": hier_metrics.r4(factors, codes, random_state=seed)["score"],
            "r4c_per_factor": dict(zip(gt.factor_names, map(float, r4c["per_factor"])))}


def run(study: Study, name: str, variant: str, seed: int, epochs: int) -> dict:
    (_, train_x), (test_f, test_x) = study.data(name)
    gt = hier_datasets.ground_truth(name)
    hierarchy, assignments, _ = study.cached_mimosa(name, seed)
    options, factorvae_adam = VARIANTS[variant]
    options = {"discriminator_dtype": study.discriminator_dtype, **options}
    resume = ResumableFit(study.stem(name, seed).with_suffix(f".ablation-{variant}-e{epochs}.backup"),
                          remove_when_done=False)  # kept through scoring
    fit = train_cofhae(as_float(train_x), hierarchy, assignments, epochs=epochs, batch_size=study.args.batch_size,
                       random_state=seed, callbacks=study.progress(f"{variant} seed {seed}"), resume=resume,
                       discriminator_optimizer=default_discriminator_optimizer() if factorvae_adam else None, **options)
    seconds = resume.seconds  # over every call it was resumed in
    steps = math.ceil(len(train_x) / study.args.batch_size) * epochs
    fresh_f, fresh_x = gt.sample(5_000, np.random.default_rng([seed, 1]))
    record = {
        "dataset": name, "variant": variant, "seed": seed, "cofhae_epochs": epochs,
        "train_size": len(train_x), "smooth_ae_epochs": study.args.epochs,
        "discriminator_dtype": dtype_label(options["discriminator_dtype"]),
        "assignment_probabilities": fit.model.assignment_probabilities,
        "discriminator_optimizer": "Adam(1e-4, 0.5, 0.9)" if factorvae_adam else "Adam(main schedule)",
        "registered_test": test_scores(gt, test_f, fit.model.encode(as_float(test_x)), hierarchy, seed),
        "fresh_test": test_scores(gt, fresh_f, fit.model.encode(as_float(fresh_x)), hierarchy, seed),
        "discriminator_units": fit.model.get_config()["discriminator_units"], "tc_rows": fit.model.tc_rows,
        "mimosa_assignments": assignments_id(assignments),
        "assignment_loss": fit.assignment_loss, "reconstruction": fit.reconstruction, "seconds": seconds,
        "steps": steps, "ms_per_step": 1000 * seconds / steps, "machine": machine(),
    }
    resume.discard()
    return record


def speed_table(path: Path) -> list[str]:
    if not path.exists():
        return []
    timing = json.loads(path.read_text())
    paper = timing["ms_per_step"]["paper"]
    m = timing["machine"]
    lines = [
        "## What each lever saves",
        "",
        f"`python -m benchmarks.cofhae_ablation --time-steps {timing['timed_steps']}`: COFHAE steps (batch 256) on "
        f"{timing['dataset']}, restart {timing['seed']}'s MIMOSA targets, best of {timing['windows']} alternating "
        f"windows of {timing['timed_steps']} steps; {m['cpu']}, {m['cores']} cores, native bfloat16: "
        f"{'yes' if m['native_bfloat16'] else 'no'} (the cores were shared with other work; the windows alternate "
        "so that every lever saw the same load).",
        "",
        "| lever | ms / step | speed-up over the paper's setting |",
        "|---|---:|---:|",
    ]
    lines += [f"| {label} | {ms:.1f} | {paper / ms:.2f}x |" for label, ms in timing["ms_per_step"].items()]
    return lines + [""]


def render(out: Path) -> None:
    records = load_records(out)
    page = out.with_suffix(".md")
    notes = kept_notes(page)
    lines = [
        "# COFHAE ablation: what moved R4c on depth-2 Chopsticks",
        "",
        "`python -m benchmarks.cofhae_ablation` (resumes; `--help`); records in `cofhae_ablation.json`.",
        "Each seed's variants share one smooth autoencoder and MIMOSA run (50 epochs, the registered",
        "90,000-series training split); values as mean ± sample standard deviation over the seeds listed.",
        "",
        "| dataset | COFHAE epochs | variant | discriminator | seeds | R4c (registered test) | R4c (5,000 fresh) "
        "| R4 (registered) | L_x (training) | L_a (training) | ms / step | minutes |",
        "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def group(r: dict) -> tuple:
        return r["dataset"], r["cofhae_epochs"], r["variant"], r["discriminator_dtype"]

    groups = dict.fromkeys(map(group, records))
    for name, epochs, variant, dtype in sorted(groups, key=lambda g: (g[0], g[1], list(VARIANTS).index(g[2]), g[3])):
        rows = [r for r in records if group(r) == (name, epochs, variant, dtype)]
        timed = [r["ms_per_step"] for r in rows if "ms_per_step" in r]
        lines.append(
            f"| {name} | {epochs} | {variant} | {dtype} | {', '.join(str(r['seed']) for r in rows)} | "
            f"{mean_std([r['registered_test']['r4c'] for r in rows])} | {mean_std([r['fresh_test']['r4c'] for r in rows])} | "
            f"{mean_std([r['registered_test']['r4'] for r in rows])} | {mean_std([r['reconstruction'] for r in rows])} | "
            f"{mean_std([r['assignment_loss'] for r in rows], 4)} | {mean_std(timed, 1) if timed else '-'} | "
            f"{np.mean([r['seconds'] for r in rows]) / 60:.1f} |"
        )
    lines += ["", *speed_table(out.with_name(out.stem + "_speed.json"))]
    page.write_text("\n".join(lines) + "\n" + NOTES_MARK + notes)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["chopsticks/depth2_either"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cofhae-epochs", type=int, default=10, help="COFHAE's epochs (the smooth autoencoder: 50)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--cache", default="runs/ross2021-cache", help="smooth-autoencoder codes and MIMOSA output")
    parser.add_argument("--out", type=Path, default=RESULTS / "cofhae_ablation.json")
    parser.add_argument("--quiet", action="store_true", help="no per-epoch progress bars")
    parser.add_argument("--render", action="store_true", help="only redraw the page from the records")
    parser.add_argument("--time-steps", type=int, default=None,
                        help="only time this many steps of each discriminator lever (first dataset and seed)")
    parser.add_argument("--windows", type=int, default=3, help="with --time-steps: alternating windows per lever")
    args = parser.parse_args(argv)
    if args.time_steps:
        study = Study.configured(cache=args.cache, batch_size=args.batch_size, discriminator_dtype="float32", quiet=True)
        timing = time_levers(study, args.datasets[0], args.seeds[0], args.time_steps, args.windows)
        args.out.with_name(args.out.stem + "_speed.json").write_text(json.dumps(timing, indent=1) + "\n")
    elif not args.render:
        study = Study.configured(cache=args.cache, batch_size=args.batch_size, quiet=args.quiet)
        done = {key(r) for r in load_records(args.out)}
        for seed in args.seeds:
            for name in args.datasets:
                for variant in args.variants:
                    if (name, variant, seed, args.cofhae_epochs) in done:
                        continue
                    record = run(study, name, variant, seed, args.cofhae_epochs)
                    append_record(args.out, record)
                    render(args.out)
                    print(f"{name} {variant} seed {seed}: R4c {record['registered_test']['r4c']:.3f} "
                          f"(fresh {record['fresh_test']['r4c']:.3f}) in {record['seconds'] / 60:.1f} min", flush=True)
    render(args.out)


if __name__ == "__main__":
    main()
