"""The study runners of the ``benchmarks`` package: one record per finished run, resuming, the page.

Each runner is run end to end at a tiny size (a few training steps), then again to
show that a rerun trains nothing and leaves the records as they were.
"""
import importlib
import json
import math

import keras
import numpy as np
import pytest

from benchmarks.study import write_records
from hier_models.hierarchical import grid_points
from stopping import StopAtEpoch


def load_runner(name: str):
    return importlib.import_module(f"benchmarks.{name}")


@pytest.fixture(scope="module")
def chen2022():
    return load_runner("chen2022")


@pytest.fixture(scope="module")
def ross2021():
    return load_runner("ross2021")


def _no_training(*args, **kwargs):
    raise AssertionError("a resumed study trained a run it already holds")


def test_chen2022_appends_a_record_renders_the_page_and_resumes(chen2022, tmp_path, monkeypatch):
    out = tmp_path / "chen.json"
    argv = ["--datasets", "boxhead/boxhead1", "--models", "VAE", "--betas", "5", "--capacities", "small",
            "--seeds", "0", "--steps", "2", "--train-size", "64", "--eval-size", "64", "--output", str(out), "--quiet"]
    chen2022.main(argv)
    records = json.loads(out.read_text())
    assert len(records) == 1
    record = records[0]
    assert {k: record[k] for k in ("dataset", "model", "beta", "capacity", "seed", "steps", "train_size")} == {
        "dataset": "boxhead/boxhead1", "model": "VAE", "beta": 5.0, "capacity": "small", "seed": 0, "steps": 2,
        "train_size": 64}
    for name in ("dci_macro_disentanglement", "dci_micro_disentanglement"):
        assert 0.0 <= record[name] <= 1.0
    assert math.isfinite(record["elbo"]) and record["elbo"] == pytest.approx(-(record["reconstruction"] + record["kl"]))
    assert record["beta_start"] == 200.0 and record["precision"] == "float32"
    page = out.with_suffix(".md").read_text()
    assert "## Every configuration" in page and "beta-VAE" in page

    monkeypatch.setattr(chen2022, "train", _no_training)
    before = out.read_text()
    chen2022.main(argv)
    assert out.read_text() == before


def test_chen2022_minutes_use_the_throughput_of_the_precision_trained(chen2022, tmp_path):
    out = tmp_path / "chen.json"
    rate = dict(model="ProVLAE", capacity="small", batch_size=32, device=chen2022.device(), steps=10, seconds=20.0,
                parameters=1, load=0.0)
    chen2022.write_records(chen2022.throughput_path(out), [{**rate, "precision": "float32", "steps_per_second": 0.5},
                                                            {**rate, "precision": "mixed_bfloat16",
                                                             "steps_per_second": 2.0}])

    class Args:
        steps, minutes, batch_size, output = None, 20.0, 32, out

    assert chen2022.steps_for(Args, "ProVLAE", "small", "float32") == 600
    assert chen2022.steps_for(Args, "ProVLAE", "small", "mixed_bfloat16") == 2400
    with pytest.raises(SystemExit, match="no throughput of ProLVAE .*run --measure-throughput"):
        chen2022.steps_for(Args, "ProLVAE", "small", "float32")


def test_chen2022_compares_ladders_only_with_single_layer_runs_of_equal_steps(chen2022):
    def run(model, steps, macro, micro):
        return dict(dataset="boxhead/boxhead1", model=model, steps=steps, dci_macro_disentanglement=macro,
                    dci_micro_disentanglement=micro)

    unequal = [run("ProVLAE", 585, 0.9, 0.5), run("ProLVAE", 805, 0.8, 0.4), run("BetaVAE", 2345, 0.1, 0.0)]
    assert chen2022.ladders_versus_single(unequal) == [
        "No ladder has trained for as many steps as a single-layer model (ladders: 585, 805 steps; single-layer "
        "models: 2,345), so none is compared here; the paper's comparison is at equal steps."]
    equal = unequal + [run("ProLVAE", 2345, 0.6, 0.2), run("BetaTCVAE", 2345, 0.3, 0.1)]
    table = chen2022.ladders_versus_single(equal)
    assert table[2:] == ["| boxhead1 | 2,345 | 3 | 0.600 / 0.200 | 0.200 / 0.050 |"]


def test_ross2021_appends_a_record_renders_the_page_and_resumes(ross2021, tmp_path, monkeypatch, capsys):
    out = tmp_path / "ross.json"
    argv = ["--datasets", "chopsticks/depth2_inter", "--mimosa-seeds", "--model-seeds", "0", "--models", "AE",
            "--train-size", "512", "--test-size", "256", "--epochs", "1", "--interventional-points", "100",
            "--out", str(out), "--cache", str(tmp_path / "cache")]
    ross2021.main(argv)
    shown = capsys.readouterr()
    assert "training AE" in shown.err  # the run's epoch bar
    assert "[1/1] AE chopsticks/depth2_inter seed 0" in shown.out and "done in" in shown.out
    records = json.loads(out.read_text())
    assert [(r["dataset"], r["model"], r["seed"], r["train_size"], r["epochs"]) for r in records] == [
        ("chopsticks/depth2_inter", "AE", 0, 512, 1)]
    assert 0.0 <= records[0]["r4c"] <= 1.0 and 0.0 <= records[0]["dci_disentanglement"] <= 1.0
    assert records[0]["machine"]["cores"] >= 1
    page = out.with_suffix(".md").read_text()
    assert "| chopsticks/depth2_inter | 512 | 1 | - | " in page  # Fig. 3's row: no COFHAE yet
    kept = keras.models.load_model(tmp_path / "cache" / "chopsticks-depth2_inter-n512-e1-s0.AE.keras")
    assert kept.latent_dim == 3

    monkeypatch.setattr(ross2021.Study, "run_model", _no_training)
    before = out.read_text()
    ross2021.main(argv)
    assert out.read_text() == before


def test_ross2021_pending_lists_the_missing_runs_with_their_recorded_minutes_and_trains_nothing(
        ross2021, tmp_path, monkeypatch, capsys):
    out = tmp_path / "ross.json"
    run = dict(dataset="chopsticks/depth2_inter", train_size=512, epochs=1)
    write_records(out, [
        {**run, "model": "AE", "seed": 0, "seconds": 600.0, "seconds_scoring": 60.0},
        {**run, "model": "AE", "seed": 1, "seconds": 1200.0, "seconds_scoring": 60.0},
        {**run, "model": "AE", "seed": 9, "seconds": 60.0, "train_size": 1024},  # other sizes: not alike
        {**run, "model": "MIMOSA", "seed": 0, "seconds_autoencoder": 3000.0, "seconds_mimosa": 60.0},
        {**run, "model": "MIMOSA", "seed": 1, "seconds_mimosa": 6.0},  # its codes came from the cache
        {**run, "model": "COFHAE", "seed": 0, "seconds": 540.0, "seconds_scoring": 60.0}])
    before = out.read_text()
    monkeypatch.setattr(ross2021.Study, "run_model", _no_training)
    monkeypatch.setattr(ross2021.Study, "run_mimosa", _no_training)
    argv = ["--datasets", "chopsticks/depth2_inter", "--mimosa-seeds", "--model-seeds", "0", "1", "2",
            "--models", "AE", "COFHAE", "FactorVAE", "--train-size", "512", "--epochs", "1", "--out", str(out),
            "--cache", str(tmp_path / "cache"), "--pending"]
    ross2021.main(argv)
    cofhae = "~61 min (1 recorded, with its smooth autoencoder and MIMOSA, not in --cache)"  # 10 + 51
    assert capsys.readouterr().out.splitlines() == [
        f"6 of the 9 runs these options name are not in {out}; minutes: the median of the recorded restarts of "
        "the same run (any machine)",
        "  FactorVAE chopsticks/depth2_inter seed 0: no recorded restart to estimate from",
        f"  COFHAE chopsticks/depth2_inter seed 1: {cofhae}",
        "  FactorVAE chopsticks/depth2_inter seed 1: no recorded restart to estimate from",
        "  AE chopsticks/depth2_inter seed 2: ~16 min (2 recorded)",
        f"  COFHAE chopsticks/depth2_inter seed 2: {cofhae}",
        "  FactorVAE chopsticks/depth2_inter seed 2: no recorded restart to estimate from",
        "total ~2.3 h, plus 3 runs without an estimate"]
    assert out.read_text() == before and not out.with_suffix(".md").exists()
    ross2021.main(["--datasets", "chopsticks/depth2_inter", "--mimosa-seeds", "0", "--model-seeds", "0", "1",
                   "--models", "AE", "--train-size", "512", "--epochs", "1", "--out", str(out), "--cache",
                   str(tmp_path / "cache"), "--pending"])
    assert capsys.readouterr().out.startswith("nothing pending: ")


def test_ross2021_smooth_autoencoder_and_baselines_resume_at_the_epoch_they_stopped(ross2021, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    argv = ["--datasets", "chopsticks/depth2_inter", "--mimosa-seeds", "0", "--model-seeds", "0", "--models", "AE",
            "--train-size", "512", "--test-size", "256", "--epochs", "2", "--interventional-points", "100",
            "--out", str(tmp_path / "ross.json"), "--cache", str(cache), "--quiet"]
    progress = ross2021.Study.progress
    for stage, backup in [("smooth autoencoder", "s0.autoencoder.backup"), ("AE", "s0.AE.keras.backup")]:
        monkeypatch.setattr(ross2021.Study, "progress", lambda self, name: (
            [StopAtEpoch(1, name)] if name == stage else progress(self, name)))
        with pytest.raises(KeyboardInterrupt, match=stage):
            ross2021.main(argv)
        saved = json.loads((cache / f"chopsticks-depth2_inter-n512-e2-{backup}" / "training_metadata.json").read_text())
        assert saved["epoch"] == 1 and saved["seconds"] > 0
    monkeypatch.setattr(ross2021.Study, "progress", progress)
    ross2021.main(argv)
    mimosa, ae = json.loads((tmp_path / "ross.json").read_text())
    assert (mimosa["model"], ae["model"]) == ("MIMOSA", "AE")
    assert mimosa["seconds_autoencoder"] > 0 and ae["seconds"] > 0
    _, assignments, _ = ross2021.Study.configured(cache=cache, train_size=512, epochs=2).cached_mimosa(
        "chopsticks/depth2_inter", 0)
    assert mimosa["mimosa_assignments"] == ross2021.assignments_id(assignments)  # what COFHAE runs name
    assert not list(cache.glob("*.backup")), "a finished run leaves no backup behind"


def test_ross2021_a_baseline_stopped_while_scoring_is_scored_again_without_training(ross2021, tmp_path, monkeypatch):
    cache, out = tmp_path / "cache", tmp_path / "ross.json"
    argv = ["--datasets", "chopsticks/depth2_inter", "--mimosa-seeds", "--model-seeds", "0", "--models", "AE",
            "--train-size", "512", "--test-size", "256", "--epochs", "2", "--interventional-points", "100",
            "--out", str(out), "--cache", str(cache), "--quiet"]
    scores = ross2021.Study.test_scores

    def stopped(self, *args, **kwargs):
        raise KeyboardInterrupt("scoring")

    monkeypatch.setattr(ross2021.Study, "test_scores", stopped)
    with pytest.raises(KeyboardInterrupt, match="scoring"):
        ross2021.main(argv)
    backup = cache / "chopsticks-depth2_inter-n512-e2-s0.AE.keras.backup"
    saved = json.loads((backup / "training_metadata.json").read_text())
    assert saved["epoch"] == 2 and not out.exists()  # trained in full, no record yet
    trained = []
    monkeypatch.setattr(ross2021.Study, "test_scores", scores)
    monkeypatch.setattr(ross2021.Study, "progress", lambda self, name: [
        keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: trained.append(epoch))])
    ross2021.main(argv)
    (record,) = json.loads(out.read_text())
    assert trained == [] and record["model"] == "AE"
    assert record["seconds"] == pytest.approx(saved["seconds"], abs=1.0)  # the first call's training, not a new one
    assert not backup.exists(), "the backup goes once the record is written"


def test_ross2021_shows_the_straight_through_column_once_it_has_a_run(ross2021):
    base = dict(dataset="spaceshapes", train_size=54000, epochs=50, seed=0)
    records = [{**base, "model": "COFHAE", "r4c": 0.441, "r4": 0.489}]
    assert ross2021.shown_models(records) == ross2021.MODELS
    assert ross2021.history_table(records)[2] == "| spaceshapes | 54,000 | 50 | 0.441 | - | - | - | 0.489 |"
    rows = ross2021.history_table(records + [{**base, "model": "COFHAE-ST", "r4c": 0.7, "r4": 0.6}])
    assert rows[0].endswith("| FactorVAE R4c | COFHAE-ST R4c | COFHAE R4 |")
    assert rows[2] == "| spaceshapes | 54,000 | 50 | 0.441 | - | - | - | 0.700 | 0.489 |"


def test_ross2021_headline_shows_the_protocol_with_mean_sample_std_and_restarts(ross2021):
    """Fig. 3 under the paper's protocol: COFHAE-SH and the baselines at the registered
    size, mean ± sample standard deviation (ddof 1) with the number of restarts."""
    base = dict(dataset="chopsticks/depth2_both", train_size=90000, epochs=50)
    records = [{**base, "model": "COFHAE-SH", "seed": s, "r4c": v} for s, v in enumerate((0.9, 0.8, 0.7))]
    records += [{**base, "model": "AE", "seed": 0, "r4c": 0.4}, {**base, "model": "COFHAE", "seed": 0, "r4c": 0.99}]
    records += [{**base, "model": "COFHAE-SH", "seed": 0, "r4c": 0.1, "train_size": 512}]  # another size: left out
    rows = ross2021.headline_table(records)
    assert rows[0] == ("| dataset | COFHAE-SH R4c (restarts) | AE R4c (restarts) | BetaTCVAE R4c (restarts) | "
                       "FactorVAE R4c (restarts) |")
    assert rows[2] == "| chopsticks/depth2_both | 0.800 ± 0.100 (3) | 0.400 (1) | - | - |"
    assert len(rows) == 3


def test_ross2021_selection_table_shows_each_restarts_choice_and_its_paired_default(ross2021):
    points = grid_points(ross2021.PAPER_GRID)
    default = points.index(ross2021.DEFAULT_POINT)
    weakest = points.index({"tau": 0.5, "lambda_assign": 100.0, "lambda_tc": 1.0})

    def restart(seed, r4c, last, dtype):
        rungs = [{"configurations": list(range(27))}, {"configurations": [weakest, default, 1]},
                 {"configurations": last}]
        return {"dataset": "chopsticks/depth2_both", "model": "COFHAE-SH", "seed": seed, "epochs": 50, "r4c": r4c,
                "discriminator_units": [256] * 3, "discriminator_dtype": dtype, "seconds": 1500.0,
                "selection": {"points": points, "rungs": rungs, "chosen": points[weakest]}}

    records = [restart(1, 0.80, [weakest, default, 0], None), restart(0, 0.95, [weakest, 0, 6], "mixed_bfloat16")]
    paired = [{"dataset": "chopsticks/depth2_both", "seed": s, "variant": "disc-256", "cofhae_epochs": 50,
               "discriminator_units": [256] * 3, "discriminator_dtype": d, "registered_test": {"r4c": v}}
              for s, d, v in [(0, "float32", 0.90), (1, "mixed_bfloat16", 0.93), (1, "float32", 0.92)]]
    rows = ross2021.selection_table(records, paired)
    # a default trained on other MIMOSA assignments than its restart's is marked
    fingerprinted = [{**r, "mimosa_assignments": "aaaa"} for r in records]
    marked = ross2021.selection_table(fingerprinted, [{**p, "mimosa_assignments": "bbbb"} for p in paired])
    assert "| 0.900 (float32; other MIMOSA assignments) |" in marked[2]
    assert "| 0.920 (other MIMOSA assignments) |" in marked[3]
    assert ross2021.selection_table(fingerprinted, [{**p, "mimosa_assignments": "aaaa"} for p in paired]) == rows
    assert rows[0].startswith("| dataset | restart | R4c | chosen (tau, lambda_assign, lambda_tc) |")
    assert "| default (1, 100, 10) R4c |" in rows[0]
    # restart 0 first; its default ran only in float32, so the precision is named
    assert rows[2] == "| chopsticks/depth2_both | 0 | 0.950 | 0.5, 100, 1 | 1, 1, 1 | 2 of 3 | 0.900 (float32) | 25 |"
    assert rows[3] == "| chopsticks/depth2_both | 1 | 0.800 | 0.5, 100, 1 | 1, 10, 1 | 3 of 3 | 0.920 | 25 |"
    assert rows[-1] == ("Of 2 restarts: the rule chose lambda_tc 1 on 2; every configuration of the last rung had it "
                        "on 1; the default configuration reached the last rung on 1. Against the default trained once "
                        "on the same restart (2 restarts): the rule's choice above it by more than 0.02 on 1, within "
                        "0.02 on 0, below by more on 1.")
    assert ross2021.selection_table(records[:0], paired) == []


def test_ross2021_page_lists_superseded_records_with_the_reason(ross2021, tmp_path):
    assert ross2021.superseded_table(tmp_path / "none.json") == []
    path = tmp_path / "ross_superseded.json"
    path.write_text(json.dumps([{"dataset": "spaceshapes", "model": "MIMOSA", "seed": 0, "h_error": 0,
                                 "purity": 0.908, "coverage": 0.961, "superseded_because": "an unseeded autoencoder"}]))
    rows = ross2021.superseded_table(path)
    assert rows[0] == "## Superseded records" and "`ross_superseded.json`" in rows[2]
    assert rows[-2] == "| spaceshapes | MIMOSA | 0 | 0 | 0.908 | 0.961 | - | an unseeded autoencoder |"


def test_ross2021_supersede_moves_the_named_runs_and_the_next_run_retrains_only_them(ross2021, tmp_path, monkeypatch,
                                                                                      capsys):
    out = tmp_path / "ross.json"
    common = dict(dataset="chopsticks/depth2_inter", train_size=512, test_size=256, epochs=1, batch_size=256)
    out.write_text(json.dumps([{**common, "model": m, "seed": s, "r4c": 0.5, "seconds": 60.0}
                                for s in (0, 1) for m in ("AE", "BetaTCVAE")]))
    argv = ["--datasets", "chopsticks/depth2_inter", "--mimosa-seeds", "--models", "AE", "--model-seeds", "0",
            "--train-size", "512", "--test-size", "256", "--epochs", "1", "--out", str(out),
            "--cache", str(tmp_path / "cache")]
    monkeypatch.setattr(ross2021.Study, "run_model", _no_training)
    with pytest.raises(SystemExit):
        ross2021.main(argv + ["--supersede", " "])
    assert "--supersede needs a reason" in capsys.readouterr().err
    ross2021.main(argv + ["--supersede", "unseeded weights"])
    assert "superseded 1 record: AE chopsticks/depth2_inter seed 0" in capsys.readouterr().out
    assert [(r["model"], r["seed"]) for r in json.loads(out.read_text())] == [("BetaTCVAE", 0), ("AE", 1), ("BetaTCVAE", 1)]
    page = out.with_suffix(".md").read_text()
    assert "| chopsticks/depth2_inter | AE | 0 | - | - | - | 0.500 | unseeded weights |" in page
    with pytest.raises(SystemExit):  # the same command again: nothing left to supersede
        ross2021.main(argv + ["--supersede", "unseeded weights"])
    assert "no record in" in capsys.readouterr().err

    ran = []
    monkeypatch.setattr(ross2021.Study, "run_model",
                        lambda self, name, model, seed: ran.append((model, seed)) or {**self.common(name, model, seed),
                                                                                      "r4c": 0.6, "seconds": 60.0})
    ross2021.main(argv + ["--models", "AE", "BetaTCVAE", "--model-seeds", "0", "1"])
    assert ran == [("AE", 0)]


def test_ross2021_names_a_float32_selections_checkpoint_folder(ross2021, tmp_path):
    study = ross2021.Study.configured(cache=str(tmp_path), discriminator_dtype="float32", discriminator_units=256)
    folder = study.halving_folder("spaceshapes", 2)
    assert folder == tmp_path / "spaceshapes-n54000-e50-s2.COFHAE-SH-256x256x256-tcall-float32-r3-10-50.halving"


def test_ross2021_rejects_an_unknown_dataset(ross2021, tmp_path, capsys):
    with pytest.raises(SystemExit):
        ross2021.main(["--datasets", "chopsticks/depth4_inter", "--out", str(tmp_path / "ross.json")])
    assert "unknown datasets ['chopsticks/depth4_inter']" in capsys.readouterr().err
    assert not (tmp_path / "ross.json").exists()


class _FixedCodes:
    """A stand-in for a kept model: ``encode`` returns codes prepared for the test split."""

    def __init__(self, codes, hierarchy=None):
        self.codes = codes
        if hierarchy is not None:
            self.hierarchy = hierarchy

    def encode(self, observations):
        assert len(observations) == len(self.codes)
        return self.codes


@pytest.fixture
def probe(monkeypatch):
    return load_runner("ross2021_probe")


def _scores(rows):
    return {(r["true path"], r["factor"]): r for r in rows}


def test_ross2021_probe_tells_held_mixed_and_lost_factors_apart(probe):
    import hier_datasets

    name, size = "chopsticks/depth2_inter", 600
    gt = hier_datasets.ground_truth(name)
    factors, _ = probe.split(name, "test", size)
    codes = factors
    paths = gt.paths(factors)

    # a model whose codes are the true hierarchy's: each factor in its own code, every row on its path
    held = _scores(probe.probe(name, _FixedCodes(codes, gt.hierarchy), size, seed=0))
    assert set(held) == {("chop1=stop", "intercept0"), ("chop1=chop", "intercept0"), ("chop1=chop", "intercept1")}
    for row in held.values():
        assert row["learned path"] == row["true path"] and row["n"] == row["of"] == int(
            (paths == gt.hierarchy.path_names.index(row["true path"])).sum())
        assert row["best single"] > 0.97 and row["jointly, linear"] > 0.999

    # a flat model holding the two intercepts rotated by 45 degrees: jointly (linearly) there, no code alone
    a, b = codes[:, 0], codes[:, 2]
    mixed = _scores(probe.probe(name, _FixedCodes(np.stack([a + b, a - b], axis=1)), size, seed=0))
    row = mixed[("chop1=chop", "intercept1")]
    assert row["learned path"] == "all codes" and row["n"] == row["of"]
    assert row["jointly, linear"] > 0.999 and row["best single"] < 0.8

    # constant codes hold nothing
    lost = _scores(probe.probe(name, _FixedCodes(np.zeros((size, 2))), size, seed=0))
    assert all(r["jointly"] < 0.05 and r["jointly, linear"] < 0.05 for r in lost.values())
    assert "| chop1=chop | all codes (" in probe.table(list(lost.values()))


def test_ross2021_probe_names_the_missing_model(probe, tmp_path, capsys):
    with pytest.raises(SystemExit):
        probe.main(["spaceshapes", "FactorVAE", "--cache", str(tmp_path)])
    assert "no kept model at" in capsys.readouterr().err


@pytest.fixture(scope="module")
def sensitivity():
    return load_runner("mimosa_sensitivity")


def test_mimosa_sensitivity_runs_each_value_once_renders_and_resumes(sensitivity, tmp_path, monkeypatch):
    from hier_models import fit_mimosa, paper_settings

    out = tmp_path / "sens.json"
    argv = ["--datasets", "chopsticks/depth2_slope", "--seeds", "0", "--train-size", "2000", "--epochs", "1",
            "--hyperparameters", "paper", "contagion_num", "initial_dim", "--cache", str(tmp_path / "cache"),
            "--out", str(out), "--quiet"]
    sensitivity.main(argv)
    records = json.loads(out.read_text())
    # the paper's setting once, then every other value of each hyperparameter, the widths last
    assert [(r["hyperparameter"], r["value"]) for r in records] == [
        ("paper", 0), *[("contagion_num", v) for v in (1, 2, 3, 8, 12)], *[("initial_dim", v) for v in (1, 2, 4)]]
    assert [r["initial_dim"] for r in records] == [3] * 6 + [4, 5, 7]
    for r in records:
        assert 0.0 <= r["coverage"] <= 1.0 and (r["purity"] is None or 0.0 < r["purity"] <= 1.0)
        assert r["train_size"] == 2000 and r["seed"] == 0
    # the paper's point is MIMOSA with the paper's settings on the cached codes
    codes = np.load(tmp_path / "cache" / "chopsticks-depth2_slope-n2000-e1-s0.codes.npy")
    options = paper_settings("chopsticks/depth2_slope")
    options.pop("initial_dim")
    result = fit_mimosa(codes, **options)
    assert records[0]["learned_hierarchy"] == result.hierarchy.to_json()
    assert records[0]["coverage"] == pytest.approx(float(np.mean(result.assignments >= 0)))
    assert (tmp_path / "cache" / "chopsticks-depth2_slope-n2000-e1-s0.d7.codes.npy").exists()
    # the codes' spectrum on the paper's point and the widths, one share per code
    assert [len(r.get("code_variance", [])) for r in records] == [3] + [0] * 5 + [4, 5, 7]
    assert records[0]["code_variance"] == pytest.approx(sensitivity.principal_variance(codes))
    page = out.with_suffix(".md").read_text()
    assert "| chopsticks/depth2_slope | contagion (contagion_num 1) |" in page and "| 5 (paper) | 1 |" in page
    assert "| chopsticks/depth2_slope | 7 | 0 |" in page and "| chopsticks/depth2_slope | 3 | 0 |" in page
    assert out.with_suffix(".png").stat().st_size > 10_000

    monkeypatch.setattr(sensitivity, "fit_mimosa", _no_training)
    before = out.read_text()
    sensitivity.main(argv)
    assert out.read_text() == before


def test_mimosa_sensitivity_principal_variance_is_each_directions_share(sensitivity):
    # two independent codes of variance 4 and 1, rotated and shifted, and a constant one
    rng = np.random.default_rng(0)
    plane = rng.standard_normal((20_000, 2)) * [2.0, 1.0]
    plane = (plane - plane.mean(0)) / plane.std(0) * [2.0, 1.0]
    angle = 0.7
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    codes = np.column_stack([plane @ rotation + 5.0, np.full(len(plane), 3.0)])
    shares = sensitivity.principal_variance(codes)
    assert shares == pytest.approx([0.8, 0.2, 0.0], abs=0.01) and sum(shares) == pytest.approx(1.0)
    assert sensitivity.principal_variance(np.outer(np.arange(10.0), [1.0, -2.0])) == pytest.approx([1.0, 0.0])


def test_mimosa_sensitivity_points_hold_the_paper_setting_once_per_family(sensitivity):
    space = sensitivity.points("spaceshapes")
    assert space.count(("paper", 0)) == 1
    assert ("cos_simil_thresh", 0.95) not in space and ("cos_simil_thresh", 0.99) in space  # 0.95 is Spaceshapes'
    assert ("contagion_num", 3) not in space and ("contagion_num", 5) in space
    chop = sensitivity.points("chopsticks/depth2_both")
    assert ("cos_simil_thresh", 0.99) not in chop and ("ransac_frac", 2 / 3) not in chop
    assert len(chop) == 1 + sum(len(v) - 1 for v in sensitivity.SWEEP.values())


def test_mimosa_sensitivity_scales_the_edge_function_and_keeps_the_rest(sensitivity):
    from hier_models._mimosa.settings import default_min_common_edge_frac

    options = sensitivity.mimosa_options("spaceshapes", "min_common_edge_frac", 2.0)
    assert options["min_common_edge_frac"](3) == pytest.approx(2 * default_min_common_edge_frac(3))
    assert options["cos_simil_thresh"] == 0.95 and options["contagion_num"] == 3
    assert sensitivity.mimosa_options("spaceshapes", "paper", 0) == {"cos_simil_thresh": 0.95, "contagion_num": 3}
    assert sensitivity.mimosa_options("spaceshapes", "initial_dim", 2) == {"cos_simil_thresh": 0.95, "contagion_num": 3}


def test_mimosa_sensitivity_records_a_run_without_hierarchy(sensitivity, tmp_path):
    study = sensitivity.Study.configured(cache=tmp_path, train_size=1000, epochs=1, quiet=True)
    record = sensitivity.run_point(study, "chopsticks/depth2_slope", 0, "min_size_merged", 0.99)
    assert record["coverage"] == 0.0 and record["purity"] is None and record["h_error"] is None
    assert record["no_hierarchy"].startswith("no component reached min_size_merged=990 points")


@pytest.fixture(scope="module")
def noise_study():
    return load_runner("mimosa_noise")


def test_mimosa_noise_shares_the_clean_codes_renders_and_resumes(noise_study, tmp_path, monkeypatch):
    out, cache = tmp_path / "noise.json", tmp_path / "cache"
    argv = ["--datasets", "chopsticks/depth2_both", "--seeds", "0", "--noise", "0", "0.02", "--train-size", "2000",
            "--epochs", "1", "--cache", str(cache), "--out", str(out), "--quiet"]
    noise_study.main(argv)
    records = json.loads(out.read_text())
    assert [(r["dataset"], r["seed"], r["noise"], r["train_size"]) for r in records] == [
        ("chopsticks/depth2_both", 0, 0.0, 2000), ("chopsticks/depth2_both", 0, 0.02, 2000)]
    for r in records:
        assert 0.0 <= r["coverage"] <= 1.0 and 0.0 <= r["overestimated_dims"] <= 1.0
    # noise 0 is the Ross study's restart: the same cached codes
    assert sorted(p.name for p in cache.iterdir()) == [
        "chopsticks-depth2_both-n2000-e1-s0.codes.npy", "chopsticks-depth2_both-n2000-e1-s0.noise0.02.codes.npy"]
    assert "| chopsticks/depth2_both | 0.02 | 1 |" in out.with_suffix(".md").read_text()
    assert out.with_suffix(".png").stat().st_size > 10_000

    monkeypatch.setattr(noise_study, "fit_mimosa", _no_training)
    before = out.read_text()
    noise_study.main(argv)
    assert out.read_text() == before


def test_noisy_split_keeps_the_factors_and_adds_noise_of_that_std(noise_study):
    factors, clean = noise_study.split("chopsticks/depth2_both", "train", 3000)
    same, noisy = noise_study.split("chopsticks/depth2_both", "train", 3000, 0.02)
    np.testing.assert_array_equal(factors, same)
    assert np.std(noisy - clean) == pytest.approx(0.02, rel=0.02)
    dims = noise_study.true_dims(noise_study.hier_datasets.ground_truth("chopsticks/depth2_both"), factors)
    assert set(np.unique(dims)) == {2, 4}  # both mechanisms: 2 continuous factors per chop level


def test_baseline_penalties_records_the_penalty_shows_cofhae_and_resumes(tmp_path, monkeypatch):
    penalties = load_runner("baseline_penalties")
    out, cache, study_out = tmp_path / "pen.json", tmp_path / "cache", tmp_path / "ross.json"
    study_out.write_text(json.dumps([{"dataset": "chopsticks/depth2_both", "model": "COFHAE-SH", "r4c": 0.97},
                                     {"dataset": "chopsticks/depth2_both", "model": "COFHAE", "r4c": 0.5}]))
    argv = ["--datasets", "chopsticks/depth2_both", "--values", "2", "--seeds", "0", "--train-size", "512",
            "--test-size", "256", "--epochs", "1", "--interventional-points", "100", "--cache", str(cache),
            "--out", str(out), "--study-out", str(study_out), "--quiet"]
    penalties.main(argv)
    (record,) = json.loads(out.read_text())
    assert (record["model"], record["beta"], record["seed"], record["train_size"]) == ("BetaTCVAE", 2.0, 0, 512)
    assert 0.0 <= record["r4c"] <= 1.0
    kept = keras.models.load_model(cache / "chopsticks-depth2_both-n512-e1-s0.BetaTCVAE-beta2.keras")
    assert kept.beta == 2.0
    page = out.with_suffix(".md").read_text()
    assert "| chopsticks/depth2_both | BetaTCVAE | beta 2 |" in page
    assert "COFHAE in the Ross study: COFHAE-SH R4c 0.970 (1 runs)." in page  # the selected one, not the single run
    assert penalties.cofhae_r4c(json.loads(study_out.read_text())[1:], "chopsticks/depth2_both") == ("COFHAE", [0.5])
    assert penalties.cofhae_r4c([], "chopsticks/depth2_both") == ("", [])

    monkeypatch.setattr(penalties.Study, "run_model", _no_training)
    before = out.read_text()
    penalties.main(argv)
    assert out.read_text() == before

    # at the study's own gamma the study's run is taken, not trained again; one trained here comes first
    study_run = {"dataset": "chopsticks/depth2_both", "model": "FactorVAE", "seed": 0, "train_size": 512, "epochs": 1,
                 "r4c": 0.61, "r4": 0.6}
    study_out.write_text(json.dumps([study_run]))
    factor_vae = [*argv[:2], "--models", "FactorVAE", "--values", "10", *argv[argv.index("--seeds"):]]
    penalties.main(factor_vae)
    assert out.read_text() == before
    assert "| chopsticks/depth2_both | FactorVAE | gamma 10 (1 from the Ross study) | 0.610 (1) |" in \
        out.with_suffix(".md").read_text()
    own = {**study_run, "gamma": 10.0, "r4c": 0.7}
    assert penalties.with_study_runs([own], [study_run]) == [own]
    assert penalties.with_study_runs([own], [{**study_run, "seed": 1}]) == [
        own, {**study_run, "seed": 1, "gamma": 10.0, "from_study": True}]
    assert penalties.with_study_runs([own], [{**study_run, "dataset": "chopsticks/depth2_either"}]) == [own]


def test_cofhae_components_trains_each_variant_once_renders_and_resumes(tmp_path, monkeypatch):
    components = load_runner("cofhae_components")
    out = tmp_path / "components.json"
    argv = ["--variants", "Flat", "H+A+Z", "H+TC(Z|on)", "--seeds", "0", "--train-size", "512", "--test-size", "256",
            "--epochs", "1", "--interventional-points", "100", "--discriminator-units", "32",
            "--cache", str(tmp_path / "cache"), "--out", str(out), "--quiet"]
    components.main(argv)
    records = json.loads(out.read_text())
    assert [(r["variant"], r["ablation"], r["discriminator_units"]) for r in records] == [
        ("Flat", None, None), ("H+A+Z", "H+A+Z", None), ("H+TC(Z|on)", "H+TC(Z|on)", [32, 32, 32])]
    for r in records:
        assert all(0.0 <= r[key] <= 1.0 for key in components.FIG5_METRICS)
    kept = keras.models.load_model(tmp_path / "cache" / "chopsticks-depth2_both-n512-e1-s0.components-H_TC_Z_on.keras")
    assert kept.ablation == "H+TC(Z|on)"
    page = out.with_suffix(".md").read_text()
    assert "| chopsticks/depth2_both | H+TC(Z&#124;on) | [32, 32, 32] |" in page  # a '|' would split the cell

    monkeypatch.setattr(components, "run_variant", _no_training)
    before = out.read_text()
    components.main(argv)
    assert out.read_text() == before


def test_cofhae_components_resumes_a_stopped_variant_at_its_epoch(tmp_path, monkeypatch):
    components = load_runner("cofhae_components")
    cache = tmp_path / "cache"
    argv = ["--variants", "H+TC(Z|on)", "--seeds", "0", "--train-size", "512", "--test-size", "256", "--epochs", "2",
            "--interventional-points", "100", "--discriminator-units", "16", "--cache", str(cache),
            "--out", str(tmp_path / "components.json"), "--quiet"]
    monkeypatch.setattr(components.Study, "progress", lambda self, name: [StopAtEpoch(1, name)])
    with pytest.raises(KeyboardInterrupt, match=r"H\+TC"):
        components.main(argv)
    backup = cache / "chopsticks-depth2_both-n512-e2-s0.components-H_TC_Z_on.keras.backup"
    first = json.loads((backup / "training_metadata.json").read_text())
    assert first["epoch"] == 1 and len(first["history"]["loss"]) == 1
    begun = []
    monkeypatch.setattr(components.Study, "progress", lambda self, name: [
        keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: begun.append(epoch))])
    components.main(argv)
    assert begun == [1], "only the epoch left is trained"
    (record,) = json.loads((tmp_path / "components.json").read_text())
    assert record["seconds"] > first["seconds"] and not backup.exists()


def test_cofhae_ablation_scores_both_test_sets_and_resumes_a_stopped_run_at_its_epoch(tmp_path, monkeypatch):
    ablation = load_runner("cofhae_ablation")
    study = ablation.Study.configured(cache=tmp_path, train_size=512, test_size=256, epochs=1, quiet=True)
    with monkeypatch.context() as stopping:
        stopping.setattr(ablation.Study, "progress", lambda self, name: [StopAtEpoch(1, name)])
        with pytest.raises(KeyboardInterrupt, match="disc-64 seed 0"):
            ablation.run(study, "chopsticks/depth2_both", "disc-64", 0, epochs=2)
    backup = tmp_path / "chopsticks-depth2_both-n512-e1-s0.ablation-disc-64-e2.backup"
    first = json.loads((backup / "training_metadata.json").read_text())
    assert first["epoch"] == 1
    record = ablation.run(study, "chopsticks/depth2_both", "disc-64", 0, epochs=2)
    assert not backup.exists()
    assert record["discriminator_units"] == [64, 64, 64] and record["steps"] == 2 * 2  # 512 rows, batch 256
    assert record["seconds"] > first["seconds"] and record["ms_per_step"] == pytest.approx(250 * record["seconds"])
    for scores in (record["registered_test"], record["fresh_test"]):
        assert 0.0 <= scores["r4c"] <= 1.0 and 0.0 <= scores["r4"] <= 1.0
        assert set(scores["r4c_per_factor"]) == set(ablation.hier_datasets.ground_truth("chopsticks/depth2_both").factor_names)


def test_a_configured_study_keeps_the_defaults_and_names_an_unknown_setting(tmp_path):
    Study = load_runner("ross2021").Study
    study = Study.configured(cache=tmp_path, epochs=3)
    assert study.args.epochs == 3 and study.args.batch_size == 256 and study.args.rungs == [3, 10, 50]
    assert study.args.discriminator_units is None and study.args.interventional_points == 10_000
    with pytest.raises(TypeError, match=r"unknown study settings \['epoch'\]"):
        Study.configured(cache=tmp_path, epoch=3)


def test_selection_check_page_applies_the_whole_grids_third_while_the_grid_is_incomplete(tmp_path):
    check = load_runner("selection_check")
    points = check.grid_points(check.PAPER_GRID)[:12]
    # L_a rises and L_x falls with the index: of the 9 lowest-L_a (the third of the 27-point
    # grid) configuration 8 reconstructs best; a third of the 12 trained would give 3
    records = [{"dataset": "chopsticks/depth2_both", "seed": 0, "train_size": 1000, "discriminator_units": [1000] * 3,
                "tc_rows": None, "configuration": check.grid_label(p), "point": p, "reconstruction": -float(i),
                "assignment_loss": i * 1e-5, "r4c": i / 20, "r4": i / 20, "seconds": 60.0}
               for i, p in enumerate(points)]
    out = tmp_path / "selection_check.json"
    out.write_text(json.dumps(records))
    check.main(["--dataset", "chopsticks/depth2_both", "--train-size", "1000", "--cache", str(tmp_path),
                "--out", str(out), "--study-out", str(tmp_path / "ross2021.json"), "--render"])
    page = (tmp_path / "selection_check_chopsticks-depth2_both_s0_w1000.md").read_text()
    chosen = check.grid_label(points[8])
    assert f"Full grid's choice so far (the grid is incomplete): {chosen}, R4c 0.400." in page
    first_row = next(line for line in page.splitlines() if line.startswith("| tau="))
    assert first_row.startswith(f"| {chosen} |") and first_row.endswith("| grid's choice |")
    assert "12 of 27 configurations" in page


def test_selection_check_render_without_records_of_the_setting_names_what_is_recorded(tmp_path, capsys):
    check = load_runner("selection_check")
    point = check.grid_points(check.PAPER_GRID)[0]
    out = tmp_path / "selection_check.json"
    out.write_text(json.dumps([{"dataset": "chopsticks/depth2_both", "seed": 0, "train_size": 90_000,
                                "discriminator_units": [256] * 3, "tc_rows": None, "configuration": check.grid_label(point),
                                "point": point, "reconstruction": 1.0, "assignment_loss": 1e-5, "r4c": 0.9, "r4": 0.9,
                                "seconds": 60.0}]))
    with pytest.raises(SystemExit):  # the default width (1000) has no record: no empty page
        check.main(["--dataset", "chopsticks/depth2_both", "--cache", str(tmp_path), "--out", str(out),
                    "--study-out", str(tmp_path / "ross2021.json"), "--render"])
    assert "its records are of: --dataset chopsticks/depth2_both --seed 0 --discriminator-units 256" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.md"))
