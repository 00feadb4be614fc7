"""The report of a run folder: (re)drawn from its saved artefacts (:func:`report_run`),
and the writing of a report's files (:func:`write_report`)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from hierbench.figures import png_bytes, run_figures
from hierbench.files import check_writable, write_atomic, write_json
from hierbench.models import training_record
from hierbench.pages import html_page, markdown_page
from hierbench.run_folders import load_run, read_record

__all__ = ["report_run", "write_report"]


def write_report(out_dir, metrics: Mapping[str, Mapping[str, float]], figures: Mapping[str, object], *, title: str,
                 notes: str = "") -> dict:
    """Write ``metrics.json``, ``summary.md``, ``report.html`` and one PNG per figure.

    ``figures`` maps a file stem to a matplotlib figure; ``notes`` (one paragraph per
    line) follow the table. Returns the paths written, by stem or kind.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pngs = {stem: png_bytes(fig) for stem, fig in figures.items()}
    written = {}
    for stem, data in pngs.items():
        write_atomic(out / f"{stem}.png", data)
        written[stem] = out / f"{stem}.png"
    write_json(out / "metrics.json", metrics)
    write_atomic(out / "summary.md", markdown_page(title, metrics, notes=notes, images=list(pngs)))
    write_atomic(out / "report.html", html_page(title, metrics, notes=notes, images=pngs))
    written.update(metrics=out / "metrics.json", summary=out / "summary.md", html=out / "report.html")
    return written


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _ranking_note(label: str, selection: Mapping) -> str:
    """The selected configuration of one run and the ranking, with the training losses
    at the rung where each configuration stopped."""
    losses = {}
    for rung in selection["per_rung"]:
        for name, lx, la in zip(rung["configurations"], rung["reconstruction"], rung["assignment_loss"]):
            losses[name] = (rung["epochs"], lx, la)
    ranked = [f"{i}. {name} (epoch {losses[name][0]}: L_x {losses[name][1]:.4g}, L_a {losses[name][2]:.3g})"
              for i, name in enumerate(selection["ranking"][:5], start=1)]
    return f"{label}: selected {selection['ranking'][0]}; best five of {len(selection['ranking'])}: " + "; ".join(ranked)


def _notes(record: Mapping, run_dir) -> str:
    s = record["settings"]
    notes = [
        f"Datasets: {', '.join(record['datasets'])}. Models trained for {_count(s['epochs'], 'epoch')} "
        f"(the smooth autoencoder before MIMOSA {s['autoencoder_epochs']}), batch {s['batch_size']}, "
        f"seeds {', '.join(map(str, s['seeds']))}.",
        "R4, R4c, DCI, MIG, SAP, H-error and purity are measured on the test split; the FactorVAE and beta-VAE "
        f"scores (evaluation accuracy) on fresh samples of the generative process, from {s['interventional_points']} "
        "training votes of 64 samples each; MIMOSA purity and coverage on the training split. Flat codes count "
        "as one always-active group for R4c; H-error and purity are given for hierarchical codes only. On "
        "Boxhead, DCI macro / micro scores each level's factors on the codes whose largest importance is there.",
    ]
    if s.get("halving"):
        notes.append("COFHAE was selected over the paper's grid of tau, lambda_assign and lambda_tc by successive "
                     "halving: every configuration trained a few epochs, the best third by the paper's rule (the "
                     "lowest training reconstruction among the third with the lowest assignment loss) went on, "
                     "the last three to the full length.")
        for e in record["entries"]:
            selection = training_record(Path(run_dir) / e["folder"]).get("settings", {}).get("selection")
            if selection:
                notes.append(_ranking_note(e["label"], selection))
    elif s.get("grid"):
        notes.append("COFHAE was selected over the paper's grid of tau, lambda_assign and lambda_tc (each run's "
                     "history.json lists the grid's losses and the selected point).")
    if "seconds" in record:
        notes.append(f"The run took {record['seconds']:.0f} s.")
    return "\n".join(notes)


def report_run(run_dir, *, show_progress: bool = True) -> dict:
    """(Re)draw the report of a run folder from its saved artefacts; returns its metrics
    by row label."""
    run_dir = Path(run_dir)
    record = read_record(run_dir)
    check_writable(run_dir, option="RUN_DIR")
    record, entries = load_run(run_dir, record)
    metrics = {e.label: e.metrics for e in entries}
    figures = run_figures(entries, show_progress=show_progress)
    write_report(run_dir, metrics, figures, title="hierbench run", notes=_notes(record, run_dir))
    return metrics
