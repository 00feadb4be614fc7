"""Build datasets and summarise them path by path.

``python -m hier_datasets.summary chopsticks/depth2_either spaceshapes`` builds (or
reuses) each dataset in the TFDS data dir and prints, for every path of its
hierarchy, the active factors and how many train / test examples take it.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import hier_datasets


def build(name: str, data_dir: str | None = None):
    """Build (or reuse) a registered dataset; returns the TFDS builder."""
    import tensorflow_datasets as tfds

    builder = tfds.builder(name, data_dir=data_dir)
    builder.download_and_prepare()
    return builder


def path_counts(builder, split: str) -> np.ndarray:
    """Number of examples of ``split`` on each path of the builder's hierarchy."""
    import tensorflow_datasets as tfds

    hierarchy = hier_datasets.Hierarchy.from_json(builder.info.metadata["hierarchy"])
    skip = {name: tfds.decode.SkipDecoding() for name, f in builder.info.features.items() if isinstance(f, tfds.features.Image)}
    ds = builder.as_dataset(split=split, decoders=skip or None).map(lambda ex: ex["path"]).batch(65536)
    paths = np.concatenate(list(tfds.as_numpy(ds)))
    return np.bincount(paths, minlength=hierarchy.num_paths)


def path_table(builder) -> list[tuple[str, str, int, int]]:
    """Rows (path, active factors, train count, test count) for a built dataset."""
    hierarchy = hier_datasets.Hierarchy.from_json(builder.info.metadata["hierarchy"])
    train, test = path_counts(builder, "train"), path_counts(builder, "test")
    return [
        (hierarchy.path_names[p], ", ".join(hierarchy.active_dims(p)), int(train[p]), int(test[p]))
        for p in range(hierarchy.num_paths)
    ]


def format_table(rows, header=("path", "active factors", "train", "test")) -> str:
    """A plain-text table with aligned columns."""
    cells = [tuple(map(str, header))] + [tuple(map(str, r)) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    line = lambda c: "  ".join(x.rjust(w) if x.isdigit() else x.ljust(w) for x, w in zip(c, widths)).rstrip()
    return "\n".join([line(cells[0]), "  ".join("-" * w for w in widths)] + [line(c) for c in cells[1:]])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", help="datasets as for tfds.load, e.g. chopsticks/depth2_either")
    parser.add_argument("--data-dir", default=None, help="TFDS data dir (default: TFDS's own)")
    args = parser.parse_args(argv)
    for name in args.names:
        builder = build(name, args.data_dir)
        rows = path_table(builder)
        print(f"\n{name}: {builder.info.splits['train'].num_examples} train / "
              f"{builder.info.splits['test'].num_examples} test, {len(rows)} paths")
        print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
