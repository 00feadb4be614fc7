"""The ``hierbench`` command line end to end on a tiny Chopsticks config (400 / 300
examples, one epoch): report files, metrics, embedded figures, ``build``,
``evaluate --codes`` on known representations, and the failure cases (a user error:
one-line message, non-zero exit, no file left behind; a bug: its traceback)."""
from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow_datasets as tfds

import hier_datasets  # noqa: F401  (registers the builders for tfds.load)
from conftest import CLI_DATASET as DATASET
from hierbench.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
TINY = ["--train-size", "400", "--test-size", "300", "--epochs", "1", "--autoencoder-epochs", "1",
        "--interventional-points", "60", "--quiet"]
MODELS = ("AE", "BetaTCVAE", "Hierarchical")
#: the report's rows and the stems of their figures
ROWS = ("AE", "BetaTCVAE", "COFHAE (MIMOSA hierarchy)")
HIERARCHICAL_ROW, HIERARCHICAL_STEM = ROWS[2], "cofhae_mimosa_hierarchy"
STEMS = ("ae", "betatcvae", HIERARCHICAL_STEM)
#: what every model row of metrics.json must hold
METRICS = (
    "r4", "r4c", "dci_disentanglement", "dci_completeness", "dci_informativeness_train", "dci_informativeness_test",
    "mig", "sap", "factor_vae_train_accuracy", "factor_vae_eval_accuracy",
    "factor_vae_num_active_dims", "beta_vae_train_accuracy", "beta_vae_eval_accuracy",
)
#: only hierarchical codes have a hierarchy to compare and paths to score
HIERARCHY_METRICS = ("h_error", "purity")
MIMOSA = ("mimosa_purity", "mimosa_coverage", "mimosa_h_error")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def data_dir(cli_data_dir):
    """The TFDS data dir holding DATASET, built."""
    return cli_data_dir


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, data_dir):
    """A whole run (three models trained): only the tests of its report need it."""
    out = tmp_path_factory.mktemp("runs") / "tiny"
    code = main(["run", *TINY, "--datasets", "chopsticks/depth2_either", "--models", *MODELS, "--data-dir", data_dir,
                 "--out", str(out)])
    assert code == 0
    return out


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _fails(capsys, argv, folder: Path, expect: str):
    """Runs ``argv``; it must exit non-zero with a one-line message matching
    ``expect`` and leave ``folder`` exactly as it was."""
    before = _files(folder)
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"hierbench {argv[0]}: ")
    assert re.search(expect, err), err
    assert _files(folder) == before, "a failed command must leave no file behind"


# ----------------------------------------------------------------------- run
def test_run_writes_every_report_file(tiny_run, capsys):
    expected = {"metrics.json", "summary.md", "report.html", "run.json",
                f"hierarchy_{HIERARCHICAL_STEM}.png", f"components_{HIERARCHICAL_STEM}.png"}
    expected |= {f"{kind}_{stem}.png" for kind in ("pairwise", "traversals") for stem in STEMS}
    names = {p.name for p in tiny_run.iterdir() if p.is_file()}
    assert expected <= names
    for png in tiny_run.glob("*.png"):
        assert png.read_bytes().startswith(PNG_SIGNATURE)
    record = json.loads((tiny_run / "run.json").read_text())
    assert [e["model"] for e in record["entries"]] == ["AE", "BetaTCVAE", "Hierarchical"]
    for model in ("AE", "BetaTCVAE", "Hierarchical"):
        folder = tiny_run / "models" / DATASET.replace("/", "-") / f"{model}-seed0"
        assert {"model.keras", "history.json", "codes.npy", "metrics.json"} <= {p.name for p in folder.iterdir()}
        assert np.load(folder / "codes.npy").shape[0] == 300
    assert not list(tiny_run.rglob(".*")), "no temporary file may stay behind"


def test_metrics_json_has_a_value_for_every_metric(tiny_run):
    metrics = json.loads((tiny_run / "metrics.json").read_text())
    assert set(metrics) == set(ROWS)
    for model, row in metrics.items():
        wanted = METRICS + (MIMOSA + HIERARCHY_METRICS if model == HIERARCHICAL_ROW else ())
        for name in wanted:
            value = row.get(name)
            assert isinstance(value, (int, float)) and math.isfinite(value), (model, name, value)
        assert len(row["r4c_per_factor"]) == 9
    for name in HIERARCHY_METRICS:
        assert name not in metrics["AE"] and name not in metrics["BetaTCVAE"], "flat codes have no hierarchy"


def test_summary_and_html_hold_the_table_and_embed_every_figure(tiny_run):
    summary = (tiny_run / "summary.md").read_text()
    for row in ROWS:
        assert re.search(rf"^\| {re.escape(row)} +\|( +[-0-9.]+ \|)+$", summary, re.M), summary
    page = (tiny_run / "report.html").read_text()
    embedded = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    pngs = sorted(tiny_run.glob("*.png"))
    assert len(embedded) == len(pngs) == 8
    assert {base64.b64decode(e) for e in embedded} == {p.read_bytes() for p in pngs}
    assert not re.search(r'src="(?!data:)', page), "the page must not load anything from outside"
    assert "<th>R4c</th>" in page and f"<td>{HIERARCHICAL_ROW}</td>" in page


def test_report_redraws_from_saved_artefacts(tiny_run, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(tiny_run, copy)
    drawn = ["metrics.json", "summary.md", "report.html", *(p.name for p in tiny_run.glob("*.png"))]
    for name in drawn:
        (copy / name).unlink()
    assert main(["report", str(copy), "--quiet"]) == 0
    for name in drawn:
        assert (copy / name).is_file(), name
    assert json.loads((copy / "metrics.json").read_text()) == json.loads((tiny_run / "metrics.json").read_text())
    assert f"| {HIERARCHICAL_ROW}" in capsys.readouterr().out


# ------------------------------------------------------------ train / evaluate
def test_train_then_evaluate_a_saved_model(data_dir, tmp_path, capsys):
    out = tmp_path / "ae"
    assert main(["train", "--dataset", DATASET, "--model", "ae", "--epochs", "1", "--set", "hidden_units=[32]",
                 "--data-dir", data_dir, "--out", str(out), "--quiet"]) == 0
    record = json.loads((out / "history.json").read_text())
    assert record["settings"]["model"] == "AE" and record["settings"]["latent_dim"] == 9
    assert len(record["history"]["AE"]["loss"]) == 1
    capsys.readouterr()
    assert main(["evaluate", "--model", str(out), "--interventional-points", "40", "--data-dir", data_dir, "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["dataset"] == DATASET and result["split"] == "test" and result["num_examples"] == 300
    for name in METRICS:
        assert math.isfinite(result[name]), name


def test_a_stopped_train_resumes_at_the_epoch_it_stopped(data_dir, tmp_path, monkeypatch):
    """Ctrl-C as epoch 2 of 3 begins leaves backup/ in --out; the same command trains
    the last epoch only, to the unbroken command's losses and weights, and leaves no backup."""
    import keras

    from hier_models.progress import FitProgress

    def train(out: Path) -> list[str]:
        return ["train", "--dataset", DATASET, "--model", "betatcvae", "--epochs", "3", "--set", "hidden_units=[32]",
                "--data-dir", data_dir, "--out", str(out), "--quiet"]

    assert main(train(tmp_path / "whole")) == 0
    begin = FitProgress.on_epoch_begin

    def stop_at_epoch_2(self, epoch, logs=None):
        if epoch == 2:
            raise KeyboardInterrupt
        begin(self, epoch, logs)

    monkeypatch.setattr(FitProgress, "on_epoch_begin", stop_at_epoch_2)
    assert main(train(tmp_path / "stopped")) == 130, "Ctrl-C's exit status"
    assert (tmp_path / "stopped" / "backup").is_dir() and not (tmp_path / "stopped" / "model.keras").exists()
    begun = []

    def count(self, epoch, logs=None):
        begun.append(epoch)
        begin(self, epoch, logs)

    monkeypatch.setattr(FitProgress, "on_epoch_begin", count)
    assert main(train(tmp_path / "stopped")) == 0
    assert begun == [2], "only the epoch left is trained"
    assert not (tmp_path / "stopped" / "backup").exists()
    whole, resumed = (json.loads((tmp_path / name / "history.json").read_text()) for name in ("whole", "stopped"))
    assert len(resumed["history"]["BetaTCVAE"]["loss"]) == 3
    np.testing.assert_allclose(resumed["history"]["BetaTCVAE"]["loss"], whole["history"]["BetaTCVAE"]["loss"], rtol=1e-5)
    weights = [keras.models.load_model(tmp_path / name / "model.keras").get_weights() for name in ("whole", "stopped")]
    for a, b in zip(*weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _test_factors(data_dir) -> np.ndarray:
    """The test split's factors in the order the help documents for --codes."""
    ds = tfds.load(DATASET, split="test", shuffle_files=False, data_dir=data_dir)
    return np.concatenate([b["factors"] for b in tfds.as_numpy(ds.batch(128))]).astype(np.float64)


def _evaluate_codes(codes, tmp_path, data_dir, name) -> dict:
    path, out = tmp_path / f"{name}.npy", tmp_path / f"{name}.json"
    np.save(path, codes)
    assert main(["evaluate", "--codes", str(path), "--dataset", DATASET, "--data-dir", data_dir,
                 "--out", str(out), "--quiet"]) == 0
    return json.loads(out.read_text())


def test_evaluate_codes_scores_warped_factors_high_and_noise_low(data_dir, tmp_path):
    factors = _test_factors(data_dir)
    rng = np.random.default_rng(0)
    warped = np.column_stack([np.exp(f) if j % 2 else f**3 + f for j, f in enumerate(factors.T)])
    warped = warped[:, rng.permutation(warped.shape[1])]
    good = _evaluate_codes(warped, tmp_path, data_dir, "warped")
    assert good["r4"] >= 0.95
    noise = _evaluate_codes(rng.normal(size=factors.shape), tmp_path, data_dir, "noise")
    assert noise["r4"] < 0.2
    assert good["representation"].endswith("warped.npy") and "factor_vae_eval_accuracy" not in good


def test_run_halving_selects_by_successive_halving_and_reports_the_ranking(data_dir, tmp_path, monkeypatch):
    """--halving: six configurations for 1 epoch, the best two by the paper's rule to 2
    epochs; history.json holds the rungs and the ranking, the report names the choice."""
    from hierbench import options

    monkeypatch.setattr(options, "PAPER_GRID", {"tau": (0.5, 1.0), "lambda_tc": (1.0, 10.0, 100.0)})
    out = tmp_path / "halving"
    assert main(["run", *TINY[:4], "--epochs", "2", *TINY[6:], "--datasets", "chopsticks/depth2_either",
                 "--models", "Hierarchical", "--halving", "--set", "hidden_units=[32]",
                 "--set", "discriminator_units=[32]", "--interventional-points", "0", "--data-dir",
                 data_dir, "--out", str(out)]) == 0
    (folder,) = [p.parent for p in out.glob("models/*/*/history.json")]
    settings = json.loads((folder / "history.json").read_text())["settings"]
    selection = settings["selection"]
    assert selection["rungs"] == [1, 2] and [len(r["configurations"]) for r in selection["per_rung"]] == [6, 2]
    assert selection["ranking"][0] == settings["selected"] and sorted(selection["ranking"]) == sorted(selection["points"])
    first, last = selection["per_rung"]
    assert set(last["configurations"]) <= set(first["configurations"])
    summary = (out / "summary.md").read_text()
    assert f"selected {settings['selected']}" in summary and "best five of 6" in summary
    assert not (folder / "halving").exists(), "the checkpoint goes once the model is saved"

    # stopped as the fourth configuration's first rung ends, the same command resumes the selection
    from hier_models import hierarchical

    scored, calls = hierarchical._scored_run, []

    def stop_at_fourth(*args):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return scored(*args)

    argv = ["run", *TINY[:4], "--epochs", "2", *TINY[6:], "--datasets", "chopsticks/depth2_either", "--models",
            "Hierarchical", "--halving", "--set", "hidden_units=[32]", "--set", "discriminator_units=[32]",
            "--interventional-points", "0", "--data-dir", data_dir, "--out", str(tmp_path / "stopped")]
    monkeypatch.setattr(hierarchical, "_scored_run", stop_at_fourth)
    assert main(argv) == 130, "Ctrl-C's exit status"
    (checkpoint,) = (tmp_path / "stopped").glob("models/*/*/halving/halving.json")
    assert len(json.loads(checkpoint.read_text())["finished"]) == 3
    monkeypatch.setattr(hierarchical, "_scored_run", scored)
    assert main(argv) == 0
    (resumed,) = [json.loads(p.read_text())["settings"] for p in (tmp_path / "stopped").glob("models/*/*/history.json")]
    assert resumed["selected"] == settings["selected"]
    for a, b in zip(resumed["selection"]["per_rung"], selection["per_rung"]):
        assert a["configurations"] == b["configurations"]
        np.testing.assert_allclose(a["reconstruction"], b["reconstruction"], rtol=1e-5)


def test_train_grid_keeps_the_run_the_paper_rule_selects(data_dir, tmp_path, capsys, monkeypatch):
    from hierbench import models, options

    monkeypatch.setattr(options, "PAPER_GRID", {"tau": (0.5, 1.0), "lambda_tc": (1.0, 10.0)})  # 4 runs, not 27
    out = tmp_path / "grid"
    assert main(["train", "--dataset", DATASET, "--model", "hierarchical", "--grid", "--epochs", "1", "--autoencoder-epochs",
                 "1", "--set", "hidden_units=[32]", "--set", "discriminator_units=[32]", "--data-dir", data_dir,
                 "--out", str(out), "--quiet"]) == 0
    settings = json.loads((out / "history.json").read_text())["settings"]
    grid = settings["grid"]
    assert [r["hyperparameters"] for r in grid] == [
        {"tau": 0.5, "lambda_tc": 1.0}, {"tau": 0.5, "lambda_tc": 10.0},
        {"tau": 1.0, "lambda_tc": 1.0}, {"tau": 1.0, "lambda_tc": 10.0},
    ]
    # a third of 4 runs is 1: the selected run has the lowest assignment loss
    (chosen,) = [r for r in grid if r["selected"]]
    assert chosen["assignment_loss"] == min(r["assignment_loss"] for r in grid)
    chosen_point = chosen["hyperparameters"]
    assert settings["selected"] == f"tau={chosen_point['tau']:g} lambda_tc={chosen_point['lambda_tc']:g}"
    saved = models.load_model(out)
    assert (saved.tau, saved.lambda_tc) == (chosen["hyperparameters"]["tau"], chosen["hyperparameters"]["lambda_tc"])
    printed = capsys.readouterr().out
    assert f"grid of 4 COFHAE runs; selected {settings['selected']}" in printed


# -------------------------------------------------------------------- failures
def test_grid_fails_cleanly_where_it_does_not_apply(capsys, tmp_path):
    out = str(tmp_path / "out")
    _fails(capsys, ["train", "--dataset", DATASET, "--model", "AE", "--grid", "--out", out], tmp_path,
           "--grid selects COFHAE's hyperparameters; AE has no grid")
    _fails(capsys, ["train", "--dataset", DATASET, "--model", "Hierarchical", "--grid", "--set", "tau=0.5", "--out", out],
           tmp_path, "--grid varies tau, lambda_assign, lambda_tc; drop --set tau")
    _fails(capsys, ["run", "--models", "AE", "--grid", "--out", out], tmp_path,
           "--grid selects COFHAE's hyperparameters; add Hierarchical to the models")


def test_unknown_dataset_or_model_fails_cleanly(capsys, tmp_path, data_dir):
    out = str(tmp_path / "out")
    _fails(capsys, ["run", "--datasets", "nosuch/thing", "--out", out, "--data-dir", data_dir], tmp_path,
           r"unknown dataset 'nosuch/thing'; choose from .*chopsticks/depth2_either")
    _fails(capsys, ["run", "--datasets", "chopsticks/depth9_wavy", "--out", out], tmp_path, "unknown dataset")
    _fails(capsys, ["run", "--models", "AE", "NoSuchVAE", "--out", out], tmp_path,
           r"unknown model 'NoSuchVAE'; choose from AE, VAE")
    _fails(capsys, ["train", "--dataset", DATASET, "--model", "ladder", "--out", out], tmp_path, "unknown model 'ladder'")
    _fails(capsys, ["train", "--dataset", "spaceships", "--model", "AE", "--out", out], tmp_path, "unknown dataset 'spaceships'")
    _fails(capsys, ["train", "--dataset", DATASET, "--model", "AE", "--set", "gamma=3", "--out", out], tmp_path,
           "AE has no hyperparameter 'gamma'; it takes")


def test_codes_of_the_wrong_shape_fail_cleanly(capsys, tmp_path, data_dir):
    out = tmp_path / "scores.json"
    bad_rows, bad_width, flat = tmp_path / "rows.npy", tmp_path / "width.npy", tmp_path / "flat.npy"
    np.save(bad_rows, np.zeros((299, 9)))
    np.save(bad_width, np.zeros((300, 4)))
    np.save(flat, np.zeros(300))
    hierarchy = tmp_path / "hierarchy.json"
    hierarchy.write_text(hier_datasets.ground_truth("chopsticks/depth2_either").hierarchy.to_json())
    common = ["--dataset", DATASET, "--data-dir", data_dir, "--out", str(out), "--quiet"]
    _fails(capsys, ["evaluate", "--codes", str(bad_rows), *common], tmp_path,
           r"has 299 rows but chopsticks/depth2_either_400_300 split 'test' has 300 examples; .*shuffle_files=False")
    _fails(capsys, ["evaluate", "--codes", str(bad_width), "--code-hierarchy", str(hierarchy), *common], tmp_path,
           "has 4 columns but the code hierarchy has 9 dimensions")
    _fails(capsys, ["evaluate", "--codes", str(flat), *common], tmp_path, r"has shape \(300,\); save a 2-D array")
    _fails(capsys, ["evaluate", "--codes", str(tmp_path / "missing.npy"), *common], tmp_path, "no codes file")
    text, archive = tmp_path / "codes.txt", tmp_path / "codes.npz"
    np.savetxt(text, np.zeros((300, 9)))
    np.savez(archive, codes=np.zeros((300, 9)), factors=np.zeros((300, 9)))
    _fails(capsys, ["evaluate", "--codes", str(text), *common], tmp_path, "is not a .npy file .*numpy.loadtxt")
    _fails(capsys, ["evaluate", "--codes", str(archive), *common], tmp_path, r"archive of 2 arrays \(codes, factors\)")


def test_codes_in_a_new_folder_and_a_one_array_archive(tmp_path, data_dir):
    """--out in a folder that does not exist yet is created when the scores are written;
    a .npz archive holding one array is read as that array."""
    archive = tmp_path / "codes.npz"
    np.savez(archive, codes=np.random.default_rng(0).normal(size=(300, 9)))
    out = tmp_path / "newdir" / "deeper" / "scores.json"
    assert main(["evaluate", "--codes", str(archive), "--dataset", DATASET, "--data-dir", data_dir, "--split", "test",
                 "--interventional-points", "0", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["num_examples"] == 300


def test_unwritable_output_fails_cleanly(capsys, tmp_path, data_dir):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    codes = tmp_path / "codes.npy"
    np.save(codes, np.zeros((300, 9)))
    _fails(capsys, ["run", *TINY, "--data-dir", data_dir, "--out", str(blocker / "run")], tmp_path,
           "is a file, not a folder; choose another --out")
    _fails(capsys, ["run", *TINY, "--data-dir", data_dir, "--out", str(blocker)], tmp_path, "it is a file")
    _fails(capsys, ["train", "--dataset", DATASET, "--model", "AE", "--data-dir", data_dir, "--out", str(blocker / "m")],
           tmp_path, "choose another --out")
    _fails(capsys, ["evaluate", "--codes", str(codes), "--dataset", DATASET, "--data-dir", data_dir,
                    "--out", str(blocker / "scores.json")], tmp_path, "choose another --out")
    _fails(capsys, ["report", str(tmp_path)], tmp_path, "is not a run folder")


def test_every_help_is_quick_and_quiet():
    """Every command's help imports no model code (so no TensorFlow: well under a second)
    and prints nothing on stderr; the models' names and hyperparameters come from the
    library's source (hierbench.library_facts)."""
    for argv in (["--help"], *([command, "--help"] for command in COMMANDS)):
        code = (f"import sys\nfrom hierbench.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
                "assert 'tensorflow' not in sys.modules and 'hier_models' not in sys.modules, 'model code imported'\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0 and done.stderr == "", (argv, done.stderr)
        assert "usage: hierbench" in done.stdout
    assert "--halving" in subprocess.run([sys.executable, "-m", "hierbench", "train", "--help"],
                                         capture_output=True, text=True).stdout


def test_a_running_command_prints_no_tensorflow_start_up_lines(data_dir, tmp_path):
    """Once a command runs, TensorFlow's C++ lines stay hidden too: on a machine without a
    GPU its CUDA build reports a failed cuInit as an error when it first looks for
    devices, which the command does before its work."""
    codes = tmp_path / "codes.npy"
    np.save(codes, _test_factors(data_dir))
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-m", "hierbench", "evaluate", "--codes", str(codes), "--dataset", DATASET,
                           "--data-dir", data_dir, "--out", str(tmp_path / "scores.json"), "--quiet"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads((tmp_path / "scores.json").read_text())["r4"] > 0.9


def test_without_the_tf_extra_a_command_says_what_to_install(tmp_path):
    code = ("import sys\nfor blocked in ('tensorflow', 'tensorflow_datasets', 'keras', 'tqdm', 'matplotlib'):\n"
            "    sys.modules[blocked] = None\nfrom hierbench.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    for argv in (["train", "--dataset", DATASET, "--model", "AE", "--out", str(tmp_path / "ae")],
                 ["build", "chopsticks/depth2_either"]):
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        assert done.returncode == 2 and done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"hierbench {argv[0]}: ") and "hierbench[tf]" in lines[0], lines
    assert not (tmp_path / "ae").exists()
    helped = subprocess.run([sys.executable, "-c", code, "train", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "BetaTCVAE:" in helped.stdout  # the help needs no TensorFlow


def test_help_of_every_command(capsys):
    for command, words in {
        "build": ["NAME", "--traceback"],
        "train": ["--dataset", "--model", "--out", "--set", "BetaTCVAE:", "Hierarchical:"],
        "evaluate": ["--codes", "--model", "shuffle_files=False", "--code-hierarchy"], "report": ["RUN_DIR"],
        "run": ["--datasets", "--models", "--seeds", "--train-size", "--epochs", "20000 train / 5000 test"],
    }.items():
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        for word in words:
            assert word in text, (command, word)


# ------------------------------------------------------------------ build
def test_build_prints_the_examples_of_every_path(data_dir, capsys):
    assert main(["build", DATASET, "--data-dir", data_dir]) == 0
    out = capsys.readouterr().out
    assert f"{DATASET}: 400 train / 300 test, 6 paths" in out
    rows = [line.split() for line in out.splitlines()[4:] if line.strip()]  # after title, header and rule
    assert len(rows) == 6
    assert sum(int(r[-2]) for r in rows) == 400 and sum(int(r[-1]) for r in rows) == 300


# ------------------------------------------------- names, errors and layering
def test_model_names_resolve_case_insensitively():
    from hierbench.options import HIERARCHICAL, resolve_model, row_label

    assert resolve_model("hierarchical") == HIERARCHICAL == "Hierarchical"
    assert resolve_model("HIERARCHICAL") == HIERARCHICAL
    assert row_label(HIERARCHICAL) == "COFHAE (MIMOSA hierarchy)" and row_label("AE") == "AE"
    with pytest.raises(TypeError, match="model name must be a string"):
        resolve_model(3)


def test_set_for_a_model_not_run_fails_in_one_line(capsys, tmp_path):
    code = main(["run", "--models", "AE", "--set", "Hierarchical.tau=0.5", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[0].startswith(
        "hierbench run: --set 'Hierarchical.tau=0.5' names Hierarchical, which is not among the models AE")


def test_user_error_is_one_line_and_its_traceback_on_request(capsys, tmp_path, monkeypatch):
    _fails(capsys, ["report", str(tmp_path)], tmp_path, "is not a run folder")
    assert main(["--traceback", "report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "CommandError" in err
    assert err.strip().splitlines()[-1].startswith("hierbench report: ")
    monkeypatch.setenv("HIERBENCH_TRACEBACK", "1")
    assert main(["report", str(tmp_path), "--traceback"]) == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_an_internal_bug_surfaces_with_its_traceback(tmp_path, monkeypatch, capsys):
    from hierbench import report

    def broken(run_dir):
        raise ValueError("an internal bug, not the user's input")

    monkeypatch.setattr(report, "read_record", broken)
    with pytest.raises(ValueError, match="an internal bug"):
        main(["report", str(tmp_path)])
    assert capsys.readouterr().err == ""


def test_mimosa_finding_no_hierarchy_is_a_user_error(data_dir, tmp_path, capsys, monkeypatch):
    from hier_models import NoHierarchyFound, recipes

    def no_hierarchy(*args, **kwargs):
        raise NoHierarchyFound("no component reached min_size_merged=8 points")

    monkeypatch.setattr(recipes, "fit_hierarchical", no_hierarchy)
    common = ["train", "--dataset", DATASET, "--model", "Hierarchical", "--data-dir", data_dir, "--quiet"]
    _fails(capsys, [*common, "--out", str(tmp_path / "m")], tmp_path,
           r"MIMOSA found no hierarchy in the autoencoder's codes \(no component reached .*\); train on more examples")
    # a bad neighbourhood size is not "no hierarchy": it is refused before anything trains
    _fails(capsys, [*common, "--set", "num_nearest_neighbors=1", "--out", str(tmp_path / "m")], tmp_path,
           r"MIMOSA cannot run on 400 codes of width 4: num_nearest_neighbors must be an integer >= 2, got 1")
    _fails(capsys, [*common, "--set", "tau=-1", "--out", str(tmp_path / "m")], tmp_path, r"COFHAE: .*tau")
    _fails(capsys, ["train", "--dataset", DATASET, "--model", "AE", "--set", "latent_dim=0", "--data-dir", data_dir,
                    "--quiet", "--out", str(tmp_path / "m")], tmp_path, r"AE: .*latent_dim.*fix the --set value")


def test_a_checkpoint_left_by_other_settings_is_a_user_error(data_dir, tmp_path, capsys, monkeypatch):
    from hier_models import recipes
    from hier_models.halving_checkpoint import CheckpointMismatch

    def stale(*args, **kwargs):
        raise CheckpointMismatch("checkpoint folder m/halving holds another selection (its rungs differ)")

    monkeypatch.setattr(recipes, "fit_hierarchical", stale)
    _fails(capsys, ["train", "--dataset", DATASET, "--model", "Hierarchical", "--halving", "--data-dir", data_dir,
                    "--quiet", "--out", str(tmp_path / "m")], tmp_path,
           r"holds another selection \(its rungs differ\); .*other settings left it: give another --out, or remove")


def test_the_models_core_imports_neither_metrics_nor_matplotlib():
    """The models import no metrics until asked: `import hier_models` works with matplotlib
    unavailable (Keras, which tries it, does without) and loads no hier_metrics."""
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import hier_models, hier_models.hierarchical, hier_models.data, hier_models.cofhae\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('hier_metrics', 'matplotlib') and sys.modules[m])\n"
        "assert not loaded, loaded\n"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-2000:]


def test_mimosa_tells_no_hierarchy_from_a_bad_setting():
    """What the command line relies on: NoHierarchyFound only when nothing survives the
    size filters; argument checks stay plain ValueErrors, and can run without codes."""
    from hier_models import NoHierarchyFound, mimosa
    from hier_models._mimosa import check_hyperparameters

    codes = np.random.default_rng(0).normal(size=(300, 3))
    with pytest.raises(NoHierarchyFound, match="no component reached min_size_merged=1000 points"):
        mimosa(codes, min_size_merged=1000)
    with pytest.raises(ValueError, match="num_nearest_neighbors must be an integer >= 2") as info:
        mimosa(codes, num_nearest_neighbors=1)
    assert not isinstance(info.value, NoHierarchyFound)
    resolved = check_hyperparameters(20_000, 4, min_size_init=0.0002, tree="kd", verbose=True)
    assert resolved["min_size_init"] == 4 and resolved["min_size_merged"] == 400 and resolved["num_nearest_neighbors"] == 40
    with pytest.raises(ValueError, match="fewer than num_nearest_neighbors=40"):
        check_hyperparameters(30, 4)
    with pytest.raises(ValueError, match="tree must be one of"):
        check_hyperparameters(1000, 4, tree="octree")
    with pytest.raises(TypeError, match="no hyperparameter neighbours"):
        check_hyperparameters(1000, 4, neighbours=5)


@pytest.mark.parametrize("unit, ticks, per_call", [("epoch", 2, 1), ("step", 6, 1), ("step", 6, 2), ("step", 6, 5)])
def test_fit_progress_counts_its_unit_and_keeps_each_stages_history(unit, ticks, per_call):
    """The step bar counts every step, also when a call runs several (``per_call``)."""
    import keras

    from hier_models.progress import FitProgress

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", steps_per_execution=per_call)
    x, y = np.zeros((12, 2), np.float32), np.ones((12, 1), np.float32)
    callback = FitProgress(["first"], unit=unit)
    for _ in range(2):
        model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=[callback])
    assert (callback._bar.total, callback._bar.n) == (ticks, ticks)
    assert list(callback.history) == ["first", "stage 2"]
    assert len(callback.history["stage 2"]["loss"]) == 2
    with pytest.raises(ValueError, match="unit must be 'epoch' or 'step'"):
        FitProgress(["x"], unit="batch")
