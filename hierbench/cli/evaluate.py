"""``hierbench evaluate``: score a saved model, or codes from any framework, with every
applicable metric."""
from __future__ import annotations

import json
from pathlib import Path

from hier_models.cli.common import DATASET_HELP, add_command, add_common, add_interventional_option
from hier_models.cli.datasets import load_split, prepare, resolve_dataset
from hier_models.cli.errors import CommandError
from hier_models.cli.files import check_writable, write_json
from hier_models.cli.pages import metrics_table
from hier_models.cli.scoring import check_codes, load_codes, load_hierarchy, score
from hier_models.cli.training import code_hierarchy, encode, load_model, training_record

__all__ = ["CODES_ORDER", "evaluate", "register"]

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
categorical columns hold option indices)."""


def evaluate(
    dataset_name: str | None,
    split: str = "test",
    *,
    model_path=None,
    codes_path=None,
    hierarchy_path=None,
    out=None,
    data_dir: str | None = None,
    seed: int = 0,
    interventional_points: int = 2000,
    show_progress: bool = True,
) -> dict:
    """Score a saved model or a ``.npy`` file of codes on ``split`` (see
    :func:`~hier_models.cli.scoring.score`); writes the result to ``out`` (JSON) when
    given and returns it.

    Everything that can be checked before the dataset is read is checked first:
    the names, the output path, and the codes' shape against ``hierarchy_path``.
    """
    if (model_path is None) == (codes_path is None):
        raise CommandError("give either a saved model or a codes file")
    if codes_path is not None:
        if dataset_name is None:
            raise CommandError("--codes needs --dataset NAME: the dataset whose split the rows follow")
        source, model = str(codes_path), None
        hierarchy = None if hierarchy_path is None else load_hierarchy(hierarchy_path)
        codes = check_codes(load_codes(codes_path), hierarchy, source=source)
    else:
        if hierarchy_path is not None:
            raise CommandError("--code-hierarchy goes with --codes; a saved model brings its own hierarchy")
        source, model = str(model_path), load_model(model_path)
        dataset_name = dataset_name or training_record(model_path).get("settings", {}).get("dataset")
        if dataset_name is None:
            raise CommandError(f"no training record beside {model_path}; say which data to score with --dataset NAME")
        hierarchy = code_hierarchy(model)
    dataset = resolve_dataset(dataset_name)
    if out is not None:
        check_writable(out, kind="file")
    data = load_split(prepare(dataset, data_dir), dataset, split, show_progress=show_progress)
    if model is None:
        codes = check_codes(codes, hierarchy, source=source, data=data)
        representation = None
    else:
        codes = encode(model, data.observations, data.scale)
        representation = lambda obs: encode(model, obs, data.scale)  # noqa: E731
    metrics = score(data, codes, hierarchy=hierarchy, representation=representation,
                    interventional_points=interventional_points, seed=seed, show_progress=show_progress)
    result = dict(dataset=dataset.name, split=split, num_examples=len(data), representation=source, **metrics)
    if out is not None:
        write_json(Path(out), result)
    return result


def _evaluate(args) -> int:
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


def register(sub, defaults) -> None:
    """Add ``evaluate`` to ``sub``; ``defaults`` (a RunSettings) gives the scoring defaults."""
    p = add_command(
        sub, "evaluate", _evaluate, summary="score a saved model or external codes with every applicable metric (JSON)",
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
