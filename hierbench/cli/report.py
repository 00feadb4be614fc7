"""``hierbench report``: (re)draw a run folder's report from its saved artefacts."""
from __future__ import annotations

from pathlib import Path

from hierbench.cli import COMMANDS
from hierbench.cli.arguments import add_command, add_common

__all__ = ["register"]


def _report(args) -> int:
    from hierbench.pages import metrics_table
    from hierbench.report import report_run

    metrics = report_run(args.run_dir, show_progress=not args.quiet)
    print(metrics_table(metrics))
    print(f"report: {Path(args.run_dir) / 'report.html'}")
    return 0


def register(sub) -> None:
    p = add_command(
        sub, "report", _report, summary=COMMANDS["report"],
        description="Redraw a run's report from the artefacts saved in RUN_DIR (models, codes, metrics, data "
                    "labels): metrics.json, summary.md, report.html (self-contained) and the figures as PNG.",
        epilog="example: hierbench report runs/default",
    )
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a folder written by hierbench run")
    add_common(p, data_dir=False)
