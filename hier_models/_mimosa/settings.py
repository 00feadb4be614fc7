"""MIMOSA's hyperparameters: their defaults and the paper's settings per dataset family
(Ross & Doshi-Velez 2021, appendix A.3)."""
from __future__ import annotations

from hier_datasets.ground_truth import parse_sized_name

__all__ = ["DEFAULTS", "PAPER_SETTINGS", "default_min_common_edge_frac", "paper_settings"]


def default_min_common_edge_frac(d: int) -> float:
    """``(2**-d + 2**-(d+1)) / 2``: between the shared-side fraction of two touching
    d-cubes (2**-d) and the smaller one of (d+1)-cubes."""
    return 0.5 * (2.0 ** (-d) + 2.0 ** (-(d + 1)))


#: Defaults of every MIMOSA hyperparameter (the paper's Chopsticks settings).
#: ``min_size_init`` / ``min_size_merged`` below 1 are fractions of the number of
#: points (rounded up, at least 1), at least 1 absolute counts (an int such as 20).
#: The paper gives both as fractions of the data (appendix A.3): 0.0002 (0.02%, about
#: 20 of its 100,000 points) and 0.02 (about 2,000).
DEFAULTS = dict(
    num_nearest_neighbors=40,
    ransac_frac=2 / 3,
    eig_cumsum_thresh=0.95,
    eig_decay_thresh=4.0,
    cos_simil_thresh=0.99,
    contagion_num=5,
    min_size_init=0.0002,
    min_size_merged=0.02,
    min_common_edge_frac=default_min_common_edge_frac,
    neighbor_lengthscale_mult=10.0,
)

#: The paper's settings for each dataset family (appendix A.3): the MIMOSA
#: hyperparameters it sets per family (``"mimosa"``; the others are :data:`DEFAULTS`
#: for both) and the width of
#: the initial smooth autoencoder for each config (``"initial_dim"``: one more than the
#: largest intrinsic dimensionality of the codes' manifolds). MIMOSA itself takes the
#: codes; ``initial_dim`` is for the step before it. Read it with :func:`paper_settings`.
PAPER_SETTINGS = {
    "chopsticks": {
        "mimosa": {"cos_simil_thresh": 0.99, "contagion_num": 5},
        "initial_dim": {
            "depth2_slope": 3,
            "depth2_inter": 3,
            "depth2_either": 4,
            "depth2_both": 5,
            "depth3_slope": 4,
            "depth3_inter": 4,
            "depth3_either": 5,
            "depth3_both": 7,
        },
    },
    "spaceshapes": {
        "mimosa": {"cos_simil_thresh": 0.95, "contagion_num": 3},
        "initial_dim": {"default": 7},
    },
}
# the depth-3 configs drawn with the authors' stopping rule span the same manifolds
PAPER_SETTINGS["chopsticks"]["initial_dim"].update(
    {f"{config}_reference": dim
     for config, dim in PAPER_SETTINGS["chopsticks"]["initial_dim"].items() if config.startswith("depth3_")}
)


def paper_settings(dataset_name: str) -> dict:
    """The paper's settings for a dataset: ``{"initial_dim": ..., **mimosa_options}``.

    ``dataset_name`` is ``family/config`` (``"chopsticks/depth3_either"``), a resized
    config ``family/config_TRAIN_TEST`` (:func:`hier_datasets.builder.sized_config`:
    the same process, the same settings) or, for a family with one config, the family
    alone (``"spaceshapes"``). The result is a new dict: ``initial_dim`` (the smooth
    autoencoder's width) and the MIMOSA hyperparameters that the paper sets for that
    family (the others are :data:`DEFAULTS`, the paper's values for both families),
    so ``mimosa(codes, **{k: v for k, v in settings.items() if k != "initial_dim"})``
    runs MIMOSA as the paper did. Raises ValueError for a family or config the paper
    did not run MIMOSA on, TypeError for a ``dataset_name`` that is not a string.
    """
    if not isinstance(dataset_name, str):
        raise TypeError(f"dataset_name must be a string 'family/config', got {dataset_name!r}")
    family, _, config = dataset_name.partition("/")
    if family not in PAPER_SETTINGS:
        raise ValueError(
            f"dataset_name {dataset_name!r}: the paper ran MIMOSA on the families {sorted(PAPER_SETTINGS)} only"
        )
    dims = PAPER_SETTINGS[family]["initial_dim"]
    if not config and len(dims) == 1:
        config = next(iter(dims))
    sized = parse_sized_name(config)
    if config not in dims and sized and sized[0] in dims:
        config = sized[0]
    if config not in dims:
        raise ValueError(
            f"dataset_name {dataset_name!r}: no paper settings for config {config!r} of {family}; "
            f"known: {[f'{family}/{c}' for c in dims]}"
        )
    return {"initial_dim": dims[config], **PAPER_SETTINGS[family]["mimosa"]}
