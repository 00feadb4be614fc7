"""The ``hierbench`` command line.

    hierbench build chopsticks/depth2_either spaceshapes

``build`` builds (or reuses) registered datasets in the TFDS data dir, with
progress, and prints how many examples take each path of the hierarchy.
"""
from __future__ import annotations

import argparse
import sys


def _build(args) -> int:
    from hier_datasets import summary

    return summary.main([*args.names] + (["--data-dir", args.data_dir] if args.data_dir else []))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hierbench", description="Hierarchical disentanglement benchmarks.")
    sub = p.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build (or reuse) datasets and summarise them per path",
                           description="Build (or reuse) registered datasets and print a per-path summary.")
    build.add_argument("names", nargs="+", metavar="NAME", help="dataset as for tfds.load, e.g. chopsticks/depth2_either")
    build.add_argument("--data-dir", default=None, help="TFDS data dir (default: TFDS's own, ~/tensorflow_datasets)")
    build.set_defaults(func=_build)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"hierbench {args.command}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
