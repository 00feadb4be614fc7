"""The comparison with the authors' implementations (benchmarks/metrics_agreement.py):
our side must score every case it tabulates, with the committed numbers."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import metrics_agreement as ma


@pytest.mark.parametrize("case", ["hierarchical", "hierarchical, merged up"])
def test_our_side_scores_the_hierarchical_cases_as_committed(case):
    names = list(ma.processes())
    process = ma.processes()[case]
    ours = ma.ours_array_metrics(ma.case_arrays(case, process, names.index(case)), process)
    committed = json.loads(ma.JSON_PATH.read_text())["ours"]
    assert not [metric for metric, entry in ours.items() if "error" in entry]
    assert ours["r4c"]["value"] > 0.99  # codes are the factors plus a little noise
    for metric in ("r4", "r4c", "dci_disentanglement", "dci_completeness", "mig", "sap"):
        assert ours[metric]["value"] == pytest.approx(committed[metric][case]["value"], abs=1e-9), metric


def test_tree_seeds_move_only_the_completeness_of_a_duplicated_code(monkeypatch):
    monkeypatch.setattr(ma, "TREE_SEEDS", 4)
    case = "duplicated code"
    spread = ma.dci_tree_seed_range(ma.case_arrays(case, ma.processes()[case], list(ma.processes()).index(case)))
    assert spread["disentanglement"] == pytest.approx([1.0, 1.0], abs=1e-4)  # each code explains one factor
    low, high = spread["completeness"]
    assert 0.85 < low < high < 0.95  # f0's importance split between its two copies, as the trees choose


def test_the_rotation_cases_inputs_do_not_depend_on_the_blas_kernels():
    # the authors' numbers are tied to the inputs' digests, so the inputs must be the
    # same bits on every CPU; OpenBLAS's older kernels change np.linalg.qr's last bits
    code = ("import numpy as np; from benchmarks import metrics_agreement as ma; "
            "q = ma.orthogonal(np.random.default_rng(11).normal(size=(5, 5))); "
            "print(ma.digest({'q': q, 'r': ma.times(np.eye(5) - 0.5, q), 'lsbd': ma.lsbd_cases()['rotation']['grid']}))")
    digests = set()
    for kernel in ("Haswell", "Prescott"):
        env = {**os.environ, "OPENBLAS_CORETYPE": kernel, "PYTHONPATH": str(Path(ma.__file__).parents[1])}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
        digests.add(done.stdout.strip())
    assert len(digests) == 1
    q = ma.orthogonal(np.random.default_rng(11).normal(size=(5, 5)))
    np.testing.assert_allclose(q.T @ q, np.eye(5), atol=1e-12)
