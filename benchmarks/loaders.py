"""Loader speed: an epoch of ``hier_datasets.data_source`` through PyTorch and Grain.

The README's recipes, timed side by side in one run on the same source (an epoch of
the train split, shuffled, batches of 256):

- ``pytorch``: ``torch.utils.data.DataLoader(source, batch_size=256, shuffle=True,
  num_workers=W)``; PyTorch's fetcher reads each batch with one
  ``source.__getitems__(indices)`` call.
- ``grain``: the README's Grain recipe, ``grain.MapDataset`` over the shuffled indices,
  batched, each batch of indices read with one ``source.read_batch(indices)`` call,
  then ``mp_prefetch`` over W worker processes.
- ``grain_per_record`` (the README's earlier recipe, kept for comparison):
  ``grain.DataLoader(data_source=source, operations=[grain.Batch(256)],
  worker_count=W)``, which reads one record at a time (16 reader threads a worker
  by default) and stacks batches into shared memory.

Loops run alternately, ``--repeats`` times each; each reports its best epoch (worker
start-up included, as every epoch of a loader without persistent workers pays it).
Results go to ``docs/results/loaders.json`` and ``docs/results/loaders.md``.

Needs PyTorch and Grain besides hierbench's ``tf`` extra::

    pip install 'hierbench[tf,loaders]'   # or: pip install torch grain
    python -m benchmarks.loaders --data-dir ~/tensorflow_datasets
    python -m benchmarks.loaders --quick  # 5,000 series, to check the script
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

import hier_datasets

OUT = Path("docs") / "results"
BATCH = 256


def _require(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise SystemExit(
            f"this benchmark needs {module.split('.')[0]}: pip install 'hierbench[loaders]' (torch and grain)"
        ) from err


def epoch_pytorch(source, workers: int) -> int:
    torch = _require("torch")
    loader = torch.utils.data.DataLoader(source, batch_size=BATCH, shuffle=True, num_workers=workers)
    return sum(int(batch["factors"].shape[0]) for batch in loader)


def epoch_grain(source, workers: int, seed: int = 0) -> int:
    grain = _require("grain.python")
    dataset = (
        grain.MapDataset.range(len(source))
        .shuffle(seed=seed)
        .batch(BATCH)
        .map(source.read_batch)
        .to_iter_dataset()
    )
    if workers:
        dataset = dataset.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers))
    return sum(int(batch["factors"].shape[0]) for batch in dataset)


def epoch_grain_per_record(source, workers: int, seed: int = 0) -> int:
    grain = _require("grain.python")
    sampler = grain.IndexSampler(len(source), shard_options=grain.NoSharding(), shuffle=True, num_epochs=1, seed=seed)
    loader = grain.DataLoader(data_source=source, sampler=sampler, operations=[grain.Batch(BATCH)], worker_count=workers)
    return sum(int(batch["factors"].shape[0]) for batch in loader)


LOOPS = {"pytorch": epoch_pytorch, "grain": epoch_grain, "grain_per_record": epoch_grain_per_record}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="chopsticks/depth2_either", help="dataset (built on first use)")
    parser.add_argument("--split", default="train")
    parser.add_argument("--data-dir", default=None, help="TFDS data dir (default TFDS's own)")
    parser.add_argument("--workers", type=int, default=4, help="worker processes of every loop (the README's 4)")
    parser.add_argument("--repeats", type=int, default=3, help="epochs of each loop, run alternately")
    parser.add_argument("--loops", default=",".join(LOOPS), help="comma-separated subset of " + ", ".join(LOOPS))
    parser.add_argument("--quick", action="store_true", help="the first 5,000 examples only, one repeat")
    parser.add_argument("--out", type=Path, default=OUT, help="folder of loaders.json and loaders.md")
    args = parser.parse_args(argv)
    loops = [name.strip() for name in args.loops.split(",") if name.strip()]
    unknown = sorted(set(loops) - set(LOOPS))
    if unknown:
        parser.error(f"unknown loops {unknown}; choose from {sorted(LOOPS)}")
    split = f"{args.split}[:5000]" if args.quick else args.split
    repeats = 1 if args.quick else args.repeats
    args.out.mkdir(parents=True, exist_ok=True)
    for name in loops:
        _require("torch" if name == "pytorch" else "grain.python")

    start = time.perf_counter()
    source = hier_datasets.data_source(args.name, split, args.data_dir)
    first_call_s = time.perf_counter() - start
    seconds = {name: [] for name in loops}
    for repeat in range(repeats):
        for name in loops:
            start = time.perf_counter()
            count = LOOPS[name](source, args.workers)
            seconds[name].append(round(time.perf_counter() - start, 3))
            if count != len(source):
                raise RuntimeError(f"{name} gave {count} examples of {len(source)}")
            print(f"{name}: epoch {repeat + 1} of {len(source)} examples in {seconds[name][-1]:.2f} s", flush=True)
    best = {name: min(times) for name, times in seconds.items()}
    from importlib.metadata import version

    results = {
        "command": command(args, parser),
        "dataset": args.name,
        "split": split,
        "examples": len(source),
        "batch_size": BATCH,
        "workers": args.workers,
        "repeats": repeats,
        "epoch_seconds": seconds,
        "best_epoch_seconds": best,
        "ratio_to_pytorch": {name: round(best[name] / best["pytorch"], 2) for name in best} if "pytorch" in best else {},
        "first_data_source_call_s": round(first_call_s, 2),
        "versions": {"torch": version("torch"), "grain": version("grain"), "numpy": np.__version__},
        "machine": {"cpus": os.cpu_count(), "processor": platform.machine(), "python": platform.python_version()},
    }
    (args.out / "loaders.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "loaders.md").write_text(markdown(results))
    print(json.dumps(best, indent=2))
    return results


def command(args, parser) -> str:
    """The command line of this run, with the data dir as a placeholder (no local paths)."""
    words = ["python -m benchmarks.loaders"]
    for action in parser._actions:
        value = getattr(args, action.dest, None) if action.option_strings else None
        if value is None or value == action.default or action.dest in ("help", "out"):
            continue
        flag = action.option_strings[-1]
        words.append(flag if value is True else f"{flag} {'DATA_DIR' if action.dest == 'data_dir' else value}")
    return " ".join(words)


def markdown(results: dict) -> str:
    rows = "\n".join(
        f"| `{name}` | {best:.2f} | {results['ratio_to_pytorch'].get(name, float('nan')):.2f}x | "
        f"{', '.join(f'{s:.2f}' for s in results['epoch_seconds'][name])} |"
        for name, best in results["best_epoch_seconds"].items()
    )
    return f"""# Loader speed: an epoch of `data_source` through PyTorch and Grain

`{results['command']}`: one epoch of `{results['dataset']}` `{results['split']}`
({results['examples']:,} examples, shuffled, batches of {results['batch_size']}, {results['workers']} worker
processes), through each loop of the README in turn, {results['repeats']} times alternately; the best
epoch of each counts (worker start-up included). Measured on a {results['machine']['cpus']}-core machine
shared with other jobs, so epochs vary from run to run.

| loop | best epoch: s | vs PyTorch | every epoch: s |
|---|---:|---:|---|
{rows}

- `pytorch`: `DataLoader(source, batch_size=256, shuffle=True, num_workers=...)`; PyTorch reads
  each batch with one `source.__getitems__(indices)`.
- `grain`: `grain.MapDataset.range(len(source)).shuffle(seed=0).batch(256).map(source.read_batch)`,
  then `.to_iter_dataset().mp_prefetch(grain.MultiprocessingOptions(num_workers=...))`: one
  batched read per batch.
- `grain_per_record`: the earlier recipe, `grain.DataLoader(..., operations=[grain.Batch(256)])`,
  which reads record by record (Grain {results['versions']['grain']} does not use `__getitems__` there)
  and stacks each batch into shared memory, some of which Python's resource tracker reports as
  leaked at exit (16 `shared_memory` objects with 4 workers, 8 with 2; a batch holds 4 arrays).

Read one at a time, a record costs some 2 to 10 times what it costs in a batched read of 256
(the ArrayRecord read call and its set-up dominate), so the per-record loop is slow whatever
its reader-thread (`ReadOptions`) and worker counts. Grain starts its workers as new processes, each importing TFDS,
which takes a few seconds of every `grain` epoch here; `.repeat(epochs)` after `.shuffle`
runs all epochs (each in its own order) on one set of workers.

Versions: torch {results['versions']['torch']}, grain {results['versions']['grain']},
numpy {results['versions']['numpy']}. The first `data_source` call of the run took
{results['first_data_source_call_s']} s (the dataset and its ArrayRecord copy were already there).
"""


if __name__ == "__main__":
    main()
