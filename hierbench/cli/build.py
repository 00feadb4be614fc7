"""``hierbench build``: build (or reuse) datasets and print how many examples take each
path of the hierarchy."""
from __future__ import annotations

from hierbench.cli import COMMANDS
from hierbench.cli.arguments import DATASET_HELP, add_command, add_common

__all__ = ["format_table", "register"]


def format_table(rows, header=("path", "active factors", "train", "test")) -> str:
    """A plain-text table with aligned columns (numbers right-aligned)."""
    cells = [tuple(map(str, header))] + [tuple(map(str, r)) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]

    def line(c):
        return "  ".join(x.rjust(w) if x.isdigit() else x.ljust(w) for x, w in zip(c, widths)).rstrip()

    return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths)] + [line(c) for c in cells[1:]])


def _build(args) -> int:
    from hierbench.datasets import path_table, prepare, resolve_dataset

    datasets = [resolve_dataset(name) for name in args.names]
    for dataset in datasets:
        builder = prepare(dataset, args.data_dir)
        rows = path_table(builder)
        splits = builder.info.splits
        print(f"\n{dataset.name}: {splits['train'].num_examples} train / {splits['test'].num_examples} test, {len(rows)} paths")
        print(format_table(rows))
    return 0


def register(sub) -> None:
    p = add_command(
        sub, "build", _build, summary=COMMANDS["build"],
        description="Build (or reuse) registered datasets in the TFDS data dir and print how many examples take "
                    "each path of the hierarchy.",
        epilog="example: hierbench build chopsticks/depth2_either spaceshapes",
    )
    p.add_argument("names", nargs="+", metavar="NAME", help=DATASET_HELP)
    add_common(p, quiet=False)
