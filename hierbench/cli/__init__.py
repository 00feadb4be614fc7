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
import contextlib
import importlib
import os
import sys
import traceback

from hierbench.errors import CommandError

__all__ = ["COMMANDS", "CommandError", "main", "parser"]

#: each command and its line in ``hierbench --help``; a command's module (and with it
#: TensorFlow) is imported only when the command runs or shows its own help
COMMANDS = {
    "build": "build (or reuse) datasets and summarise them per path",
    "train": "train one model and save it (.keras) with its training history",
    "evaluate": "score a saved model or external codes with every applicable metric (JSON)",
    "report": "(re)draw the report of a run folder",
    "run": "build, train, score and report: the default benchmark without arguments",
}

#: the environment variable that turns on --traceback
TRACEBACK_VARIABLE = "HIERBENCH_TRACEBACK"


def parser(commands=tuple(COMMANDS)) -> argparse.ArgumentParser:
    """The command line; the ``commands`` given get their full parsers, the others only
    their line in the overview (so that ``hierbench --help`` imports no model code)."""
    p = argparse.ArgumentParser(
        prog="hierbench",
        description="Hierarchical disentanglement benchmarks: build datasets, train models, score them, report.",
        epilog="`hierbench run` with no arguments runs the default benchmark; `hierbench COMMAND --help` for more.",
    )
    p.add_argument("--traceback", action="store_true",
                   help=f"on an error, show the whole Python traceback (also {TRACEBACK_VARIABLE}=1)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, summary in COMMANDS.items():
        if name in commands:
            _command_module(name).register(sub)
        else:
            sub.add_parser(name, help=summary, add_help=False)
    return p


@contextlib.contextmanager
def _native_stderr_silenced():
    """TensorFlow's C++ start-up lines (CUDA probing, CPU features, absl's notice) go to
    file descriptor 2 before any Python logging setting applies: hide that descriptor
    while the model code is imported. Python's own errors are raised afterwards."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _command_module(name: str):
    with _native_stderr_silenced():
        return importlib.import_module(f"hierbench.cli.{name}")


def _load_models_quietly() -> None:
    """Import the model code (TensorFlow) and find the devices with their start-up lines
    hidden (on a machine without a GPU, TensorFlow's CUDA build reports its failed
    ``cuInit`` as an error when it first looks), and keep TensorFlow's and TFDS's
    informational messages off the terminal; before a command runs (its help may not
    need them)."""
    with _native_stderr_silenced():
        import hier_models  # noqa: F401  (first: without the tf extra, its error names the install)

        importlib.import_module("tensorflow").config.list_physical_devices()

    import absl.logging
    import tensorflow as tf

    absl.logging.set_verbosity(absl.logging.ERROR)
    tf.get_logger().setLevel("ERROR")


def _wants_traceback(args) -> bool:
    return bool(args.traceback) or os.environ.get(TRACEBACK_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    try:
        args = parser(() if chosen not in COMMANDS else (chosen,)).parse_args(argv)
        _load_models_quietly()
    except ImportError as err:  # the light install: the commands need the tf extra
        print(f"hierbench {chosen}: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
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
