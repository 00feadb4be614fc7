"""hier_metrics and the numpy generators where TensorFlow, Keras and TFDS are not installed."""
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    # what the light install leaves out (the tf extra): any import of them raises ImportError
    for blocked in ("tensorflow", "tensorflow_datasets", "keras", "tqdm", "matplotlib"):
        sys.modules[blocked] = None

    import numpy as np
    import hier_datasets, hier_metrics as hm
    from hier_datasets import Hierarchy

    assert not hasattr(hier_datasets.chopsticks, "ChopsticksBuilder")
    for name in ("chopsticks/depth3_either", "spaceshapes"):
        gt = hier_datasets.ground_truth(name)
        f, x = gt.sample(300, 0)
        active, paths = gt.active(f), gt.paths(f)
        assert x.shape[0] == 300 and active.shape == f.shape and paths.max() < gt.hierarchy.num_paths
    bh = hier_datasets.ground_truth("boxhead/boxhead2")
    assert bh.labels(bh.sample_factors(50, 0, fixed={"macro_hue": 1 / 14})).shape == (50, 10)

    gt = hier_datasets.ground_truth("spaceshapes")
    f = gt.sample_factors(600, 1).astype(float)
    h = gt.hierarchy
    codes = f  # the true factors are a code of their own hierarchy
    assert hm.h_error(h, Hierarchy.from_json(h.to_json())) == 0
    assert hm.r4c(f, codes, factor_active=gt.active(f), code_hierarchy=h, categorical=h)["score"] > 0.9
    assert hm.purity(gt.paths(f), h.path_index(codes)) == 1.0
    for metric in (hm.r4, hm.dci, hm.mig, hm.sap):
        metric(f, codes, categorical=h)
    grid = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1) * 2 * np.pi / 8
    assert hm.lsbd(np.concatenate([np.cos(grid), np.sin(grid)], -1))["score"] < 1e-9
    res = hm.factor_vae_score(gt, lambda x: x.reshape(len(x), -1)[:, ::97].astype(float), num_train=50, num_eval=20,
                              num_variance_estimate=200)
    assert 0 <= res["score"] <= 1
    sized = hm.evaluate(lambda x: x[:, :3], "chopsticks/depth2_either_500_100", metrics=["r4"], num_samples=200)
    assert sized["dataset"] == "chopsticks/depth2_either" and sized["r4"] >= 0

    hint = "pip install 'hierbench[tf]'"
    for call, what in ((lambda: hier_datasets.build("chopsticks/depth2_either"), "building a dataset"),
                       (lambda: hier_datasets.data_source("chopsticks/depth2_either", "train"), "building a dataset"),
                       (lambda: len(hier_datasets.DataSource("/nonexistent", "train")), "reading a built dataset")):
        try:
            call()
        except ImportError as err:
            assert str(err).startswith(what + " needs TensorFlow Datasets") and hint in str(err), err
        else:
            raise AssertionError("no ImportError")
    try:
        import hier_models  # noqa: F401
    except ImportError as err:
        assert "hier_models needs TensorFlow, Keras 3 and tqdm" in str(err) and hint in str(err), err
    else:
        raise AssertionError("hier_models imported without TensorFlow")
    assert all(m not in sys.modules or sys.modules[m] is None for m in ("tensorflow", "tensorflow_datasets", "keras"))
    print("ok")
    """
)


def test_metrics_and_generators_work_without_tensorflow_keras_and_tfds():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
