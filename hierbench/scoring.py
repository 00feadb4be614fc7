"""Scoring a representation with every applicable metric of :mod:`hier_metrics`, and
reading codes and code hierarchies given on the command line."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

import hier_metrics
from hier_datasets.hierarchy import Group, Hierarchy
from hier_metrics.evaluate import ARRAY_METRICS as EVALUATED
from hier_models.cli.datasets import SplitArrays
from hier_models.cli.errors import CommandError
from hier_models.cli.files import jsonable, progress

__all__ = [
    "ARRAY_METRICS",
    "check_codes",
    "factor_groups",
    "flat_hierarchy",
    "load_codes",
    "load_hierarchy",
    "score",
]

#: the array metrics that every representation gets; ``dci_split`` only where the
#: data have factor groups (see :func:`score`)
ARRAY_METRICS = tuple(m for m in EVALUATED if m != "dci_split")


def flat_hierarchy(width: int) -> Hierarchy:
    """Codes as one group of always-active continuous dimensions z0..z{width-1}."""
    return Hierarchy(Group(tuple(f"z{i}" for i in range(width))))


def check_codes(codes, hierarchy: Hierarchy | None = None, *, source: str = "codes",
                data: SplitArrays | None = None) -> np.ndarray:
    """``codes`` as a 2-D float array, or CommandError: numbers, finite, as many
    columns as ``hierarchy`` has dimensions and, with ``data``, one row per example."""
    arr = np.asarray(codes)
    if arr.ndim != 2:
        raise CommandError(f"{source} has shape {arr.shape}; save a 2-D array, one row per example and one column per code")
    if not np.issubdtype(arr.dtype, np.number) or arr.dtype == bool:
        raise CommandError(f"{source} holds {arr.dtype} values; save numbers (float codes)")
    if hierarchy is not None and arr.shape[1] != hierarchy.num_dims:
        raise CommandError(
            f"{source} has {arr.shape[1]} columns but the code hierarchy has {hierarchy.num_dims} dimensions "
            f"({', '.join(hierarchy.names)}); save codes in its flat layout or give the matching hierarchy"
        )
    if arr.shape[1] < 1:
        raise CommandError(f"{source} has no columns; save at least one code dimension per example")
    if data is not None and arr.shape[0] != len(data):
        order = f"tfds.load({data.dataset.name!r}, split={data.split!r}, shuffle_files=False)"
        raise CommandError(
            f"{source} has {arr.shape[0]} rows but {data.dataset.name} split {data.split!r} has {len(data)} examples; "
            f"save one row per example, in the order of {order}"
        )
    if not np.all(np.isfinite(arr)):
        raise CommandError(f"{source} contains NaN or infinite values; save finite codes")
    return arr.astype(np.float64)


def load_codes(path) -> np.ndarray:
    """A ``.npy`` array of codes, or CommandError."""
    path = Path(path)
    if not path.is_file():
        raise CommandError(f"no codes file at {path}; save your codes with numpy.save as a .npy file")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise CommandError(f"cannot read {path} as a .npy array ({err}); save your codes with numpy.save") from err


def load_hierarchy(path) -> Hierarchy:
    """A ``Hierarchy`` JSON file, or CommandError."""
    try:
        return Hierarchy.from_json(Path(path).read_text())
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CommandError(
            f"cannot read {path} as a Hierarchy JSON file ({err}); write it with Hierarchy.to_json()"
        ) from err


def factor_groups(ground_truth) -> dict[str, list[str]] | None:
    """The macro- and micro-level factor groups of a dataset's metadata (Boxhead), or None."""
    meta = ground_truth.metadata()
    if "macro_factors" not in meta:
        return None
    return {"macro": list(meta["macro_factors"]), "micro": list(meta["micro_factors"])}


def score(
    data: SplitArrays,
    codes: np.ndarray,
    *,
    hierarchy: Hierarchy | None = None,
    representation: Callable | None = None,
    interventional_points: int = 2000,
    seed: int = 0,
    show_progress: bool = True,
) -> dict:
    """Every applicable metric of ``codes`` (one row per example of ``data``).

    - ``r4``, ``r4c``, ``dci_*``, ``mig``, ``sap`` on the split
      (:func:`hier_metrics.evaluate_arrays`); R4c over ``hierarchy`` (default: the
      codes as one flat, always-active group);
    - on data with macro- and micro-level factor groups (Boxhead), the split DCI
      ``dci_macro_*`` and ``dci_micro_*``, each code assigned to the group of its
      largest importance (``code_assignment="argmax"``), as the Boxhead paper's
      authors computed it;
    - for hierarchical codes (a ``hierarchy`` with a categorical), ``h_error`` of that
      hierarchy against the true one and ``purity`` of the paths the codes take;
      flat codes get neither (one path says nothing about the hierarchy);
    - with a ``representation`` function (observations -> codes), the FactorVAE and
      beta-VAE scores (:func:`hier_metrics.evaluate`) on fresh samples of the
      generative process, with ``interventional_points`` training votes / points and
      half as many for evaluation (disentanglement_lib uses 10,000); 0 skips them.
    """
    if representation is not None and not callable(representation):
        raise TypeError(f"representation must be a function of observations, got {type(representation).__name__}")
    if isinstance(interventional_points, bool) or not isinstance(interventional_points, (int, np.integer)):
        raise TypeError(f"interventional_points must be an integer, got {interventional_points!r}")
    hierarchical = hierarchy is not None and bool(np.any(hierarchy.is_categorical))
    hierarchy = hierarchy or flat_hierarchy(codes.shape[1])
    gt = data.dataset.ground_truth()
    groups = factor_groups(gt)
    metrics = [m for m in EVALUATED if m in ARRAY_METRICS or groups]
    interventional = ["factor_vae", "beta_vae"] if representation is not None and interventional_points > 0 else []
    bar = progress(total=len(metrics) + hierarchical + len(interventional), enabled=show_progress,
                   desc="scoring", unit="metric")

    done = []

    def step(name: str) -> None:
        """Advance the bar past the metric before ``name``."""
        if done:
            bar.update(1)
        done.append(name)
        bar.set_postfix_str(name)

    with bar:
        out = hier_metrics.evaluate_arrays(
            data.factors, codes, factor_active=data.active, code_hierarchy=hierarchy, categorical=data.hierarchy,
            factor_groups=groups, factor_names=data.factor_names, metrics=metrics, random_state=seed,
            metric_options={"dci_split": {"code_assignment": "argmax"}} if groups else None, progress=step,
        )
        if hierarchical:
            step("hierarchy")
            out["h_error"] = hier_metrics.h_error(hierarchy, data.hierarchy)
            out["purity"] = hier_metrics.purity(data.paths, hierarchy.path_index(codes))
        if interventional:
            points = int(interventional_points)
            sizes = dict(num_train=points, num_eval=max(1, points // 2))
            result = hier_metrics.evaluate(
                representation, gt, metrics=interventional, random_state=seed, progress=step,
                metric_options={"factor_vae": dict(sizes, num_variance_estimate=points), "beta_vae": sizes},
            )
            out.update({k: v for k, v in result.items() if k.startswith(tuple(interventional))})
    return jsonable(out)
