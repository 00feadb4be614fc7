"""``hierbench evaluate``: score a saved model, or codes from any framework, with every
applicable metric."""
from __future__ import annotations

import json
from pathlib import Path

from hierbench.cli import COMMANDS
from hierbench.cli.arguments import DATASET_HELP, add_command, add_common, add_interventional_option
from hierbench.pages import metrics_table
from hierbench.settings import DEFAULT_RUN

__all__ = ["CODES_ORDER", "register"]

CODES_ORDER = """\
rows of --codes: one per example of the chosen split, in the order in which TFDS
reads it without shuffling. After `hierbench build NAME` (or any command that
builds NAME), this gives that order:

    import hier_datasets, tensorflow_datasets as tfds
    ds = tfds.load(NAME, split=SPLIT, shuffle_files=False)   # e.g. "test", "test[:1000]"
    codes = np.concatenate([my_encoder(b["series"]) for b in tfds.as_numpy(ds.batch(1024))])
    np.save("codes.npy", codes)                              # (num_examples, num_codes)

(`image` instead of `series` for Spaceshapes and Boxhead; pass data_dir= when
--data-dir is used.) Codes are scored as one flat group of always-active
dimensions, or in the flat layout of --code-hierarchy (a Hierarchy JSON file:
categorical columns hold option index + 1 where active, 0 where inactive, as
the datasets' factors do)."""


def _evaluate(args) -> int:
    from hierbench.evaluation import evaluate  # the model code: not needed by --help

    result = evaluate(
        args.dataset, args.split, model_path=args.model, codes_path=args.codes, hierarchy_path=args.code_hierarchy,
        out=args.out, data_dir=args.data_dir, seed=args.seed, interventional_points=args.interventional_points,
        show_progress=not args.quiet,
    )
    if args.out is None:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(metrics_table({Path(result["representation"]).name: result}))
        print(f"wrote {args.out}")
    return 0


def register(sub) -> None:
    """Add ``evaluate`` to ``sub``, with the main job's defaults."""
    defaults = DEFAULT_RUN
    p = add_command(
        sub, "evaluate", _evaluate, summary=COMMANDS["evaluate"],
        description="Score a saved model, or codes from any framework, against a split of a dataset: R4, R4c, DCI, "
                    "MIG, SAP, H-error and path purity on the split; for a model also the FactorVAE and beta-VAE "
                    "scores on fresh samples of the generative process. Prints JSON, or writes it to --out.",
        epilog=CODES_ORDER + "\n\nexamples:\n  hierbench evaluate --model runs/btc\n"
               "  hierbench evaluate --codes codes.npy --dataset chopsticks/depth2_either --split test --out scores.json",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", type=Path, metavar="PATH", help="a .keras file, or a folder written by hierbench train")
    what.add_argument("--codes", type=Path, metavar="FILE.npy",
                      help="(num_examples, num_codes) array, rows in split order (below)")
    p.add_argument("--dataset", metavar="NAME", help=DATASET_HELP + "; default for --model: the one it was trained on")
    p.add_argument("--split", default="test", metavar="SPLIT", help="split to score on (default %(default)s; TFDS slices work)")
    p.add_argument("--code-hierarchy", type=Path, metavar="FILE.json", help="Hierarchy JSON of --codes' layout")
    p.add_argument("--out", type=Path, metavar="FILE.json", help="write the JSON here (default: print it)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the metrics' splits and samples (default 0)")
    add_interventional_option(p, defaults.interventional_points)
    add_common(p)
