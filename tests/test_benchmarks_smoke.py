"""Each benchmark runs end to end on the current library at a tiny size, into a
temporary folder (slow: run with ``pytest -m slow``). The committed pages come from
full runs; these runs only check that the scripts still work with the packages."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run_benchmark(name: str, *args) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]


def test_boxhead_speed(tmp_path):
    run_benchmark("boxhead_speed", "--images", 50, "--naive-images", 5, "--build", 20, "--out", tmp_path)
    results = json.loads((tmp_path / "boxhead_speed.json").read_text())
    assert set(results["cpu_ms_per_frame_breakdown"]) >= {"render_only_nothing_changed", "render_after_camera_move"}
    assert (tmp_path / "boxhead_speed.md").is_file()


def test_dci_backends(tmp_path):
    out = tmp_path / "dci_backends.json"
    run_benchmark("dci_backends", "--repeats", 1, "--agreement-points", 500, "--datasets", "chopsticks/depth2_both",
                  "--out", out)
    assert out.is_file() and out.with_suffix(".md").is_file()


def test_mimosa_cofhae(tmp_path):
    out = tmp_path / "mimosa_cofhae.json"
    run_benchmark("mimosa_cofhae", "--datasets", "chopsticks/depth2_both", "--train-size", 600, "--test-size", 300,
                  "--epochs", 1, "--seeds", 0, "--out", out)
    assert out.is_file()


def test_models_throughput(tmp_path):
    run_benchmark("models_throughput", "--data-dir", tmp_path / "data", "--warmup", 1, "--series-steps", 3,
                  "--image-steps", 2, "--repeats", 1, "--out", tmp_path)  # a folder
    cases = json.loads((tmp_path / "models_throughput.json").read_text())["cases"]
    assert set(cases) == {"series", "image"} and all(case["models"] for case in cases.values())


def test_steps_per_execution(tmp_path):
    out = tmp_path / "steps_per_execution.json"
    run_benchmark("steps_per_execution", "--steps", 4, "--windows", 1, "--out", out)
    assert out.is_file()


def test_selection_speed(tmp_path):
    out = tmp_path / "selection_speed.json"
    run_benchmark("selection_speed", "--dataset", "chopsticks/depth2_both", "--train-size", 600, "--rungs", 1, 2,
                  "--timing-steps", 2, "--cache", tmp_path / "cache", "--out", out, "--study-out",
                  tmp_path / "ross2021.json", "--quiet")
    assert out.is_file()


def test_metrics_speed_quick():
    run_benchmark("metrics_speed", "--quick")  # writes nothing


def test_loaders_quick(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "loaders.json"
    run_benchmark("loaders", "--quick", "--data-dir", tmp_path / "data", "--out", out)
    assert out.is_file()
