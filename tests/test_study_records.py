"""The records the benchmark studies keep: appended run by run, resumed by key."""
import json
import subprocess
import sys

import pytest

from benchmarks.study import load_records, mean_std, run_missing, supersede, superseded_path


def _key(record: dict) -> tuple:
    return record["dataset"], record["seed"]


def _planned():
    return ({"dataset": d, "seed": s} for s in (0, 1) for d in ("a", "b"))


def test_run_missing_runs_only_what_the_records_lack_in_order(tmp_path, capsys):
    out = tmp_path / "records.json"
    out.write_text(json.dumps([{"dataset": "b", "seed": 0, "score": 7}]))
    ran = []

    def run(unit):
        ran.append(_key(unit))
        return {**unit, "score": len(ran)}

    run_missing(out, _planned(), _key, run, lambda r: f"{r['dataset']} {r['seed']}: {r['score']}")
    assert ran == [("a", 0), ("a", 1), ("b", 1)]
    assert [(r["dataset"], r["seed"], r["score"]) for r in load_records(out)] == [
        ("b", 0, 7), ("a", 0, 1), ("a", 1, 2), ("b", 1, 3)]
    assert capsys.readouterr().out.splitlines() == ["a 0: 1", "a 1: 2", "b 1: 3"]


def test_a_run_that_fails_keeps_the_finished_records_and_the_rerun_resumes(tmp_path):
    out = tmp_path / "records.json"

    def failing_second(unit):
        if unit == {"dataset": "b", "seed": 0}:
            raise RuntimeError("stopped")
        return dict(unit)

    with pytest.raises(RuntimeError, match="stopped"):
        run_missing(out, _planned(), _key, failing_second, str)
    assert load_records(out) == [{"dataset": "a", "seed": 0}]
    ran = []
    run_missing(out, _planned(), _key, lambda unit: ran.append(unit) or dict(unit), str)
    assert ran == [{"dataset": "b", "seed": 0}, {"dataset": "a", "seed": 1}, {"dataset": "b", "seed": 1}]
    assert len(load_records(out)) == 4


def test_mean_std_uses_the_sample_standard_deviation():
    assert mean_std([1.0, 2.0, 3.0]) == "2.000 ± 1.000"
    assert mean_std([0.5]) == "0.500"


def test_supersede_moves_the_matching_records_with_the_reason_and_keeps_the_rest(tmp_path):
    out = tmp_path / "study.json"
    out.write_text(json.dumps([{"dataset": d, "seed": s} for s in (0, 1) for d in ("a", "b")]))
    old = superseded_path(out)
    assert old == tmp_path / "study_superseded.json"
    old.write_text(json.dumps([{"dataset": "c", "seed": 0, "superseded_because": "earlier"}]))
    moved = supersede(out, lambda r: r["seed"] == 0, "unseeded weights")
    assert moved == [{"dataset": "a", "seed": 0, "superseded_because": "unseeded weights"},
                     {"dataset": "b", "seed": 0, "superseded_because": "unseeded weights"}]
    assert load_records(out) == [{"dataset": "a", "seed": 1}, {"dataset": "b", "seed": 1}]
    assert [r["dataset"] for r in load_records(old)] == ["c", "a", "b"]
    # the study then finds those units missing and trains them again
    ran = []
    run_missing(out, _planned(), _key, lambda unit: ran.append(_key(unit)) or dict(unit), str)
    assert ran == [("a", 0), ("b", 0)]


def test_supersede_without_a_match_or_a_reason_writes_nothing(tmp_path):
    out = tmp_path / "study.json"
    out.write_text(json.dumps([{"dataset": "a", "seed": 0}]))
    before = out.read_text()
    assert supersede(out, lambda r: r["seed"] == 5, "no such run") == []
    with pytest.raises(ValueError, match="say why"):
        supersede(out, lambda r: True, "  ")
    assert out.read_text() == before and not superseded_path(out).exists()


def test_the_study_module_and_the_boxhead_benchmark_import_without_tensorflow():
    # Boxhead's scene refuses to render in a process that has imported TensorFlow, and
    # boxhead_speed renders in its own process
    code = "import sys, benchmarks.boxhead_speed; print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
