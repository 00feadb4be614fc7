"""The report's pages as text: the models x metrics table (Markdown that also reads
as plain text), ``summary.md`` and the self-contained ``report.html`` with the
figures embedded as PNG. Nothing here writes a file (see
:func:`hierbench.report.write_report`).
"""
from __future__ import annotations

import base64
import html
from typing import Mapping, Sequence

import numpy as np

__all__ = ["METRIC_LABELS", "html_page", "markdown_page", "metrics_table", "table_columns"]


#: summary-table columns in order, with their short headers
METRIC_LABELS = {
    "r4c": "R4c",
    "r4": "R4",
    "dci_disentanglement": "DCI-D",
    "dci_completeness": "DCI-C",
    "dci_informativeness_test": "DCI-I",
    "dci_macro_disentanglement": "DCI-D macro",
    "dci_macro_completeness": "DCI-C macro",
    "dci_micro_disentanglement": "DCI-D micro",
    "dci_micro_completeness": "DCI-C micro",
    "mig": "MIG",
    "sap": "SAP",
    "factor_vae_eval_accuracy": "FactorVAE",
    "beta_vae_eval_accuracy": "beta-VAE",
    "h_error": "H-error",
    "purity": "purity",
    "mimosa_purity": "MIMOSA purity",
    "mimosa_coverage": "MIMOSA coverage",
}


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _cell(value) -> str:
    if not _is_number(value):
        return "-"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.3f}"


def table_columns(metrics: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The :data:`METRIC_LABELS` keys that some row holds (else every numeric key)."""
    present = {k for row in metrics.values() for k, v in row.items() if _is_number(v)}
    return [c for c in METRIC_LABELS if c in present] or sorted(present)


def _table_cells(metrics: Mapping[str, Mapping[str, float]], columns: Sequence[str]) -> tuple[list, list]:
    """Header and rows of the summary table as text cells."""
    head = ["model"] + [METRIC_LABELS.get(c, c) for c in columns]
    body = [[str(model)] + [_cell(row.get(c)) for c in columns] for model, row in metrics.items()]
    return head, body


def metrics_table(metrics: Mapping[str, Mapping[str, float]], columns: Sequence[str] | None = None) -> str:
    """Markdown table, one row per model and one column per metric, padded so that it
    also reads as plain text; ``-`` where a model has no value."""
    columns = table_columns(metrics) if columns is None else list(columns)
    head, body = _table_cells(metrics, columns)
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells):
        return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join("-" * (w + 1) + (":" if i else "-") for i, w in enumerate(widths)) + "|"
    return "\n".join([line(head), rule, *map(line, body)])


def _paragraphs(notes: str) -> list[str]:
    return [line for line in notes.splitlines() if line.strip()]


def markdown_page(title: str, metrics: Mapping[str, Mapping[str, float]], *, notes: str = "",
                  images: Sequence[str] = ()) -> str:
    """``summary.md``: the title, the table, ``notes`` (one paragraph per line) and a
    link to ``<stem>.png`` for each of ``images``."""
    md = [f"# {title}", "", metrics_table(metrics), ""]
    md += [x for par in _paragraphs(notes) for x in (par, "")]
    md += [f"![{s}]({s}.png)" for s in images]
    return "\n".join(md) + "\n"


def html_page(title: str, metrics: Mapping[str, Mapping[str, float]], *, notes: str = "",
              images: Mapping[str, bytes] | None = None) -> str:
    """``report.html``: the same table and notes, and each PNG of ``images`` (stem ->
    bytes) embedded as a data URL, so that the page loads nothing from outside."""
    head, body = _table_cells(metrics, table_columns(metrics))
    table = (
        "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
        + "</table>"
    )
    pictures = "".join(
        f'<h2>{html.escape(stem.replace("_", " "))}</h2>'
        f'<img alt="{html.escape(stem)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'
        for stem, data in (images or {}).items()
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "td:first-child{text-align:left}img{max-width:100%}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{table}"
        + "".join(f"<p>{html.escape(par)}</p>" for par in _paragraphs(notes))
        + f"{pictures}</body></html>"
    )
