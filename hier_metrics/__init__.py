"""hier_metrics: disentanglement metrics for flat and hierarchical representations.

Every metric works on numpy arrays (rows = examples) and never imports TensorFlow, so
codes from any framework can be scored against the ground truth::

    import hier_metrics
    scores = hier_metrics.r4(factors, codes)            # {"score": ..., "per_factor": ...}
    all_scores = hier_metrics.evaluate_arrays(factors, codes)

Hierarchical metrics (Ross & Doshi-Velez 2021): :func:`r4`, :func:`r4c`,
:func:`h_error`, :func:`purity`, :func:`coverage`. Baselines with disentanglement_lib's
definitions: :func:`dci` (and :func:`dci_split` over factor groups), :func:`mig`,
:func:`sap`, :func:`factor_vae_score`, :func:`beta_vae_score`, :func:`modularity`,
:func:`explicitness`, :func:`irs`, :func:`fairness`, :func:`downstream_task`,
:func:`strong_downstream_task`; of the codes alone: :func:`unsupervised_scores`
(:func:`gaussian_total_correlation`, :func:`gaussian_wasserstein_correlation`,
:func:`mutual_info_score`) and, over several models, :func:`udr`. Symmetry-based:
:func:`lsbd`. For disentanglement_lib scripts, :mod:`hier_metrics.dlib_compat` gives its
``compute_*`` functions. All at once: :func:`evaluate`, :func:`evaluate_arrays`.

The result dicts of :func:`r4`, :func:`r4c`, :func:`dci`, :func:`mig`, :func:`sap`,
:func:`lsbd` and the FactorVAE and beta-VAE scores carry their headline number under
``"score"``. A factor that is constant over the evaluated rows (for R^4_c, its active rows) carries
no information to recover: R^4, R^4_c, DCI, MIG and SAP leave it out of their means,
report it as NaN wherever they return per-factor values, and raise ``ValueError``
when every factor is constant.

One orientation: every function takes the ground truth first (``factors``, then
``codes``), and every matrix it returns is factors x codes (:func:`r4_matrix`,
:func:`importance_matrix`, :func:`sap_matrix`, ``mig.discrete_mutual_info``), as do
:func:`dci_from_importance` and :func:`dci_split_from_importance` take it.
"""
from hier_datasets.validation import check_public_keywords
from hier_metrics._univariate import random_splits
from hier_metrics._validation import MAX_AUTO_CATEGORIES
from hier_metrics.dci import dci, dci_from_importance, dci_split, dci_split_from_importance, importance_matrix
from hier_metrics.downstream import downstream_task, strong_downstream_task
from hier_metrics.evaluate import evaluate, evaluate_arrays
from hier_metrics.fairness import fairness
from hier_metrics.interventional import beta_vae_score, factor_vae_score
from hier_metrics.irs import irs
from hier_metrics.lsbd import lsbd
from hier_metrics.mig import mig
from hier_metrics.modularity import explicitness, modularity
from hier_metrics.paths import coverage, h_error, purity
from hier_metrics.r4 import r4, r4_matrix, r4c
from hier_metrics.sap import sap, sap_matrix
from hier_metrics.udr import udr
from hier_metrics.unsupervised import (
    gaussian_total_correlation,
    gaussian_wasserstein_correlation,
    mutual_info_score,
    unsupervised_scores,
)

__all__ = [
    "MAX_AUTO_CATEGORIES",
    "beta_vae_score",
    "coverage",
    "dci",
    "dci_from_importance",
    "dci_split",
    "dci_split_from_importance",
    "downstream_task",
    "evaluate",
    "evaluate_arrays",
    "explicitness",
    "factor_vae_score",
    "fairness",
    "gaussian_total_correlation",
    "gaussian_wasserstein_correlation",
    "h_error",
    "importance_matrix",
    "irs",
    "lsbd",
    "mig",
    "modularity",
    "mutual_info_score",
    "purity",
    "r4",
    "r4_matrix",
    "r4c",
    "random_splits",
    "sap",
    "sap_matrix",
    "strong_downstream_task",
    "udr",
    "unsupervised_scores",
]

check_public_keywords(globals())  # a misspelt keyword lists the options taken
