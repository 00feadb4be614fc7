"""The ``hierbench`` command line.

    hierbench build chopsticks/depth2_either spaceshapes
    hierbench train --dataset chopsticks/depth2_either_20000_5000 --model BetaTCVAE --out runs/btc
    hierbench evaluate --model runs/btc --out runs/btc/test.json
    hierbench evaluate --codes codes.npy --dataset chopsticks/depth2_either --split test
    hierbench run                    # the embedded default benchmark, report in runs/default
    hierbench run --grid             # the same, COFHAE selected over the paper's 27-run grid
    hierbench report runs/default    # redraw a run's report from its saved artefacts

One argparse module per command registers its subparser and turns its arguments
into a call (:mod:`~hierbench.cli.build`, :mod:`~hierbench.cli.train`,
:mod:`~hierbench.cli.evaluate`, :mod:`~hierbench.cli.report`,
:mod:`~hierbench.cli.run`); :mod:`~hierbench.cli.arguments` holds the arguments
several commands share. The work is done in the :mod:`hierbench` package beside it.

A command's own errors (:class:`CommandError`: a bad name, path or value) print as
one line and exit with status 2; anything else is a bug and shows its traceback.
``--traceback`` (or ``HIERBENCH_TRACEBACK=1``) shows the traceback of a command's
own errors too.
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback

from hierbench.cli import build, evaluate, report, run, train
from hierbench.errors import CommandError

__all__ = ["CommandError", "main", "parser"]

#: the environment variable that turns on --traceback
TRACEBACK_VARIABLE = "HIERBENCH_TRACEBACK"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hierbench",
        description="Hierarchical disentanglement benchmarks: build datasets, train models, score them, report.",
        epilog="`hierbench run` with no arguments runs the default benchmark; `hierbench COMMAND --help` for more.",
    )
    p.add_argument("--traceback", action="store_true",
                   help=f"on an error, show the whole Python traceback (also {TRACEBACK_VARIABLE}=1)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build.register(sub)
    train.register(sub, run.DEFAULT_RUN)
    evaluate.register(sub, run.DEFAULT_RUN)
    report.register(sub)
    run.register(sub)
    return p


def _quiet_libraries() -> None:
    """Keep TensorFlow's and TFDS's informational messages off the terminal."""
    import absl.logging
    import tensorflow as tf

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    absl.logging.set_verbosity(absl.logging.ERROR)
    tf.get_logger().setLevel("ERROR")


def _wants_traceback(args) -> bool:
    return bool(args.traceback) or os.environ.get(TRACEBACK_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")


def main(argv=None) -> int:
    _quiet_libraries()
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except CommandError as err:
        if _wants_traceback(args):
            traceback.print_exc()
        print(f"hierbench {args.command}: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hierbench {args.command}: interrupted", file=sys.stderr)
        return 130
