"""Reproducibility of the default benchmark (``hierbench run``): what matches exactly,
what only within seed noise.

Every configuration runs the default benchmark (Chopsticks depth2_inter, 20,000 /
5,000 examples; AE, beta-TCVAE and the whole hierarchical method) in a fresh
process, so that the environment variables and thread counts it sets take effect
before TensorFlow starts:

- ``seed 0``, ``seed 1``, ``seed 2``: TensorFlow's defaults (oneDNN on, as many
  threads as cores), the per-metric spread over seeds;
- ``seed 0 again``: the same run repeated, which must give identical bytes;
- ``oneDNN off``: ``TF_ENABLE_ONEDNN_OPTS=0`` (TensorFlow's own kernels instead of
  its oneDNN graph rewrites);
- ``8 threads``: ``tf.config.threading`` intra- and inter-op pools of 8 threads,
  the work split as on an 8-core machine;
- ``AVX2 kernels``: ``ONEDNN_MAX_CPU_ISA=AVX2``, the oneDNN kernels that a CPU
  without AVX-512 runs (the matrix products of TensorFlow's CPU kernels go through
  oneDNN, which picks its kernels by the instruction set of the CPU at run time),
  alone and with 8 threads;
- ``op determinism``: ``tf.config.experimental.enable_op_determinism()``.

Each is compared with ``seed 0``: identical codes (SHA-256 of every model's
``codes.npy``) and the largest metric difference, beside the seed spread.

    python -m benchmarks.reproducibility              # resumable: finished runs are kept
    python -m benchmarks.reproducibility --only "seed 0" "oneDNN off"

Runs go to ``runs/reproducibility/``; the page to ``docs/results/reproducibility.md``
and ``.json``. Each run takes 2.5-5 minutes on 2 CPU cores.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.study import NOTES_MARK, RESULTS, kept_notes

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "reproducibility"
BASELINE = "seed 0"

#: name -> seed, environment variables, (intra, inter) threads or None, op determinism
CONFIGS = {
    "seed 0": dict(seed=0, env={}, threads=None, deterministic=False),
    "seed 1": dict(seed=1, env={}, threads=None, deterministic=False),
    "seed 2": dict(seed=2, env={}, threads=None, deterministic=False),
    "AVX2 kernels": dict(seed=0, env={"ONEDNN_MAX_CPU_ISA": "AVX2"}, threads=None, deterministic=False),
    "oneDNN off": dict(seed=0, env={"TF_ENABLE_ONEDNN_OPTS": "0"}, threads=None, deterministic=False),
    "8 threads": dict(seed=0, env={}, threads=(8, 8), deterministic=False),
    "AVX2 kernels, 8 threads": dict(seed=0, env={"ONEDNN_MAX_CPU_ISA": "AVX2"}, threads=(8, 8), deterministic=False),
    "op determinism": dict(seed=0, env={}, threads=None, deterministic=True),
    "seed 0 again": dict(seed=0, env={}, threads=None, deterministic=False),
}
SEED_CONFIGS = ("seed 0", "seed 1", "seed 2")
#: environment variables that change the kernels; cleared unless a configuration sets them
KERNEL_VARIABLES = ("TF_ENABLE_ONEDNN_OPTS", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "OMP_NUM_THREADS", "XLA_FLAGS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def folder_name(config: str) -> str:
    return config.replace(",", "").replace(" ", "_").lower()


def worker(config: str, out: str) -> None:
    """One run of the default benchmark under ``config``, in this (fresh) process."""
    import tensorflow as tf

    spec = CONFIGS[config]
    if spec["threads"] is not None:
        tf.config.threading.set_intra_op_parallelism_threads(spec["threads"][0])
        tf.config.threading.set_inter_op_parallelism_threads(spec["threads"][1])
    if spec["deterministic"]:
        tf.config.experimental.enable_op_determinism()
    import dataclasses

    from hierbench.job import run
    from hierbench.settings import DEFAULT_RUN

    settings = dataclasses.replace(DEFAULT_RUN, seeds=(spec["seed"],), out=out)
    started = time.perf_counter()
    run(settings, show_progress=False, log=lambda text: None)
    seconds = time.perf_counter() - started
    threads = (tf.config.threading.get_intra_op_parallelism_threads(),
               tf.config.threading.get_inter_op_parallelism_threads())
    Path(out, "reproducibility.json").write_text(json.dumps(dict(config=config, seconds=round(seconds, 1),
                                                                  threads=threads, env=spec["env"])) + "\n")


def run_config(config: str) -> Path:
    """The run folder of ``config``, running it first (in a subprocess) if needed."""
    out = RUNS / folder_name(config)
    if (out / "reproducibility.json").is_file():
        return out
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_VARIABLES}
    env.update(CONFIGS[config]["env"])
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    print(f"running {config!r} -> {out}", flush=True)
    subprocess.run([sys.executable, "-m", "benchmarks.reproducibility", "--worker", config, str(out)], env=env, check=True,
                   cwd=ROOT)
    return out


def load(out: Path) -> dict:
    """Metrics by row label, SHA-256 of each model's codes, seconds."""
    record = json.loads((out / "run.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    codes = {e["label"]: hashlib.sha256((out / e["folder"] / "codes.npy").read_bytes()).hexdigest()
             for e in record["entries"]}
    info = json.loads((out / "reproducibility.json").read_text())
    return dict(metrics=metrics, codes=codes, seconds=info["seconds"], threads=info["threads"], env=info["env"])


def _numeric(row: dict) -> dict:
    return {k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def seed_spread(results: dict) -> dict:
    """Per model and metric: mean, standard deviation (n - 1), min and max over seeds."""
    seeds = [results[c] for c in SEED_CONFIGS if c in results]
    spread = {}
    for model in seeds[0]["metrics"]:
        rows = [_numeric(r["metrics"][model]) for r in seeds]
        spread[model] = {}
        for key in rows[0]:
            values = [row[key] for row in rows]
            spread[model][key] = dict(values=values, mean=statistics.fmean(values),
                                      std=statistics.stdev(values) if len(values) > 1 else 0.0,
                                      min=min(values), max=max(values))
    return spread


def comparison(results: dict) -> dict:
    """Each non-seed configuration against :data:`BASELINE`: identical codes per model,
    identical metrics per model, and the largest metric difference."""
    base = results[BASELINE]
    compared = {}
    for config, result in results.items():
        if config in SEED_CONFIGS:
            continue
        per_model = {}
        for model, row in base["metrics"].items():
            a, b = _numeric(row), _numeric(result["metrics"][model])
            diffs = {k: abs(b[k] - a[k]) for k in a}
            worst = max(diffs, key=diffs.get)
            per_model[model] = dict(identical_codes=result["codes"][model] == base["codes"][model],
                                    identical_metrics=a == b, largest_difference=diffs[worst], metric=worst,
                                    differences=diffs)
        compared[config] = dict(seconds=result["seconds"], threads=result["threads"], env=result["env"], models=per_model)
    return compared


MECHANISM = (
    "TensorFlow's CPU matrix products go through oneDNN either way: with its oneDNN rewrites on (the default) "
    "as oneDNN inner-product and gemm primitives, with `TF_ENABLE_ONEDNN_OPTS=0` through Eigen's contraction, "
    "which calls oneDNN's gemm (`ONEDNN_VERBOSE=1` lists them). oneDNN picks its kernels when the program runs, "
    "from the CPU's instruction set (AVX-512 with bfloat16 here; AVX2 on many other x86-64 machines), and "
    "kernels of different vector widths add the products in a different order. The last-bit differences grow "
    "over thousands of training steps into different weights, which is why the same seed scores differently "
    "on another machine. `ONEDNN_MAX_CPU_ISA=AVX2` makes this machine run the kernels of an AVX2 machine. "
    "The number of threads can matter too: with the AVX-512 kernels 8 threads gave the same bytes as 2, with "
    "the AVX2 kernels COFHAE trained differently (its smooth autoencoder, hence MIMOSA's input, did not). "
    "TensorFlow takes the thread counts from `tf.config.threading` or, before it starts, from "
    "`TF_NUM_INTRAOP_THREADS` and `TF_NUM_INTEROP_THREADS` (by default one thread per core, so they differ "
    "between machines)."
)


def _label(metric: str) -> str:
    from hierbench.pages import METRIC_LABELS

    return METRIC_LABELS.get(metric, metric)


def _number(x: float) -> str:
    return f"{x:.3f}" if x == 0 or x >= 0.0005 else f"{x:.0e}"


def _cell(m: dict) -> str:
    """A setting's result for one model, beside the baseline."""
    if m["identical_codes"] and m["identical_metrics"]:
        return "identical"
    if not m["largest_difference"]:
        return "same metrics, other codes"
    return f"{_number(m['largest_difference'])} ({_label(m['metric'])})"


def _spread_cell(metric: str, s: dict | None, *, extremes: bool) -> str:
    if s is None:
        return "-"
    if metric in ("h_error", "mimosa_h_error"):
        return "/".join(str(int(v)) for v in s["values"])
    return f"{s['mean']:.3f} ± {s['std']:.3f}" + (f" ({s['min']:.3f}-{s['max']:.3f})" if extremes else "")


def _table(head: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """Markdown table lines; the first ``left`` columns left-aligned, the rest right."""
    rule = ["---"] * left + ["---:"] * (len(head) - left)
    return ["| " + " | ".join(cells) + " |" for cells in [head, rule, *rows]]


def _fingerprint(result: dict) -> str:
    """Codes and metrics of a run as one string: equal strings, identical runs."""
    return json.dumps([result["codes"], result["metrics"]], sort_keys=True)


def page(results: dict, spread: dict, compared: dict) -> str:
    from hierbench.pages import table_columns

    columns = table_columns(results[BASELINE]["metrics"])
    models = list(spread)
    same = [c for c, r in compared.items() if all(_cell(m) == "identical" for m in r["models"].values())]
    differ = [c for c in compared if c not in same]
    seeds = ", ".join(str(CONFIGS[c]["seed"]) for c in SEED_CONFIGS if c in results)
    settings = []
    for config, c in compared.items():
        twins = [o for o in compared if o != config and _fingerprint(results[o]) == _fingerprint(results[config])]
        settings.append([config, f"{c['threads'][0]}, {c['threads'][1]}", f"{c['seconds'] / 60:.1f}",
                         *[_cell(c["models"][m]) for m in models], ", ".join(twins) or "-"])
    lines = [
        "# Reproducibility of the default benchmark",
        "",
        "`python -m benchmarks.reproducibility`: `hierbench run` with its defaults (Chopsticks depth2_inter, "
        "20,000 / 5,000 examples; AE, beta-TCVAE, the whole hierarchical method; `make demo`) in a fresh process "
        "per setting, on a 2-core AMD EPYC with AVX-512 (TensorFlow 2.21, Keras 3), shared with other jobs, so "
        "the times are rough.",
        "",
        "## Same seed, other settings",
        "",
        f"Seed 0 under each setting against `{BASELINE}` (TensorFlow's defaults, "
        f"{results[BASELINE]['seconds'] / 60:.1f} minutes): `identical` where every model's test codes are the "
        "same bytes and every metric the same number, else the largest difference of any metric (and which).",
        "",
        *_table(["setting", "threads (intra, inter; 0 = one per core)", "minutes", *models, "same bytes as"],
                settings, left=2),
        "",
        f"Identical to `{BASELINE}`: {', '.join(same) or 'none'}. Different: {', '.join(differ) or 'none'}.",
        "",
        MECHANISM,
        "",
    ]
    if differ:
        rows = []
        for model in models:
            for metric in (m for m in columns if m in spread[model]):
                s = spread[model][metric]
                diffs = [compared[c]["models"][model]["differences"][metric] for c in differ]
                rows.append([model, _label(metric), _spread_cell(metric, s, extremes=False)]
                            + [_number(d) + (f" ({d / s['std']:.1f})" if s["std"] > 0 else "") for d in diffs])
        lines += ["## Differences beside the seed spread", "",
                  f"Per metric: mean ± standard deviation over seeds {seeds}, and how far each differing setting "
                  "moved the seed-0 value (in brackets: in standard deviations).", "",
                  *_table(["model", "metric", "seeds", *differ], rows, left=2), ""]
    rows = [[_label(c)] + [_spread_cell(c, spread[m].get(c), extremes=True) for m in models] for c in columns]
    lines += ["## Spread over seeds", "",
              f"Seeds {seeds}, TensorFlow's defaults: mean ± standard deviation (min-max); H-error per seed. Two "
              "runs of one setting that differ by less than about two standard deviations differ by seed noise, "
              "not by a real effect.", "",
              *_table(["metric", *models], rows), "", NOTES_MARK]
    return "\n".join(lines) + kept_notes(RESULTS / "reproducibility.md")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", choices=list(CONFIGS), help="run only these configurations (default: all)")
    p.add_argument("--worker", nargs=2, metavar=("CONFIG", "RESULTS"), help=argparse.SUPPRESS)
    p.add_argument("--page-only", action="store_true", help="write the page from the finished runs, run nothing")
    args = p.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    results = {}
    for config in args.only or CONFIGS:
        out = RUNS / folder_name(config)
        if not args.page_only:
            run_config(config)
        if (out / "reproducibility.json").is_file():
            results[config] = load(out)
    if BASELINE not in results:
        print(f"no finished {BASELINE!r} run yet")
        return 1
    spread, compared = seed_spread(results), comparison(results)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "reproducibility.json").write_text(json.dumps(dict(spread=spread, compared=compared), indent=1) + "\n")
    (RESULTS / "reproducibility.md").write_text(page(results, spread, compared))
    print((RESULTS / "reproducibility.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
