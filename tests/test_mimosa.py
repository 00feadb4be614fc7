"""MIMOSA: geometry kernels, component steps, hierarchy construction, and recovery of
known structure from synthetic unions of manifolds and smoothly embedded Chopsticks."""

import numpy as np
import pytest

import hier_models
from benchmarks.reference.mimosa_pointwise import fit_mimosa_pointwise, pointwise_components
from benchmarks.reference.synthetic import embedded_chopsticks
from hier_datasets.hierarchy import Categorical, Group, Hierarchy
from hier_metrics.paths import coverage, h_error, purity
from hier_models import PAPER_SETTINGS, fit_mimosa, mimosa, paper_settings
from hier_models._mimosa import DEFAULTS, _resolve, default_min_common_edge_frac, name_dimensions
from hier_models._mimosa._components import grow_components, members_of, merge_components, similar_neighbors
from hier_models._mimosa._geometry import (
    edge_mask,
    intrinsic_dims,
    local_svd,
    nearest_neighbors,
    tangent_similarity,
)
from hier_models._mimosa._tree import build_hierarchy, enclosure_ratios, enclosure_tree


# --------------------------------------------------------------------------- data
def _bend(p):
    """A smooth, gently curving map of flat 3-D coordinates into 3-D codes."""
    x, y, z = p[:, 0], p[:, 1], p[:, 2]
    return np.c_[x + 0.1 * np.sin(y), y, z + 0.25 * np.sin(1.2 * x) + 0.15 * y**2]


def _shuffled(rng, codes, labels):
    perm = rng.permutation(len(codes))
    return codes[perm], labels[perm]


def curve_in_sheet(seed=0, n_curve=1500, n_sheet=3000):
    """A dense 1-D curve running through the middle of a 2-D sheet."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(-1, 1, n_curve)
    curve = np.c_[t, 0.3 * np.sin(2 * t), np.zeros(n_curve)]
    sheet = np.c_[rng.uniform(-1, 1, (n_sheet, 2)), np.zeros(n_sheet)]
    truth = Hierarchy(Group(("t",), Categorical("on", (("curve", Group()), ("sheet", Group(("s",)))))))
    codes, paths = _shuffled(rng, _bend(np.r_[curve, sheet]), np.repeat([0, 1], [n_curve, n_sheet]))
    return codes, paths, truth


def book(seed=0, n_spine=1500, n_page=2500):
    """Two 2-D sheets meeting at a right angle along a shared dense 1-D curve."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(-1, 1, n_spine)
    spine = np.c_[t, np.zeros(n_spine), np.zeros(n_spine)]
    a = rng.uniform(0, 1, (n_page, 2)) * [2, 1] - [1, 0]
    b = rng.uniform(0, 1, (n_page, 2)) * [2, 1] - [1, 0]
    pages = np.r_[np.c_[a, np.zeros(n_page)], np.c_[b[:, 0], np.zeros(n_page), b[:, 1]]]
    truth = Hierarchy(
        Group(("t",), Categorical("on", (("spine", Group()), ("a", Group(("u",))), ("b", Group(("v",))))))
    )
    labels = np.repeat([0, 1, 2], [n_spine, n_page, n_page])
    codes, paths = _shuffled(rng, _bend(np.r_[spine, pages]), labels)
    return codes, paths, truth


def nested(seed=0, n_curve=2000, n_sheet=4000, n_volume=2000):
    """A curve inside a sheet inside a 3-D volume: a hierarchy three levels deep."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(-1, 1, n_curve)
    curve = np.c_[t, 0.3 * np.sin(2 * t), np.zeros(n_curve)]
    sheet = np.c_[rng.uniform(-1, 1, (n_sheet, 2)), np.zeros(n_sheet)]
    volume = rng.uniform(-1, 1, (n_volume, 3)) * [1, 1, 1.5]
    inner = Group(("s",), Categorical("in", (("sheet", Group()), ("volume", Group(("w",))))))
    truth = Hierarchy(Group(("t",), Categorical("on", (("curve", Group()), ("sheet", inner)))))
    labels = np.repeat([0, 1, 2], [n_curve, n_sheet, n_volume])
    codes, paths = _shuffled(rng, _bend(np.r_[curve, sheet, volume]), labels)
    return codes, paths, truth


def _check_recovery(codes, true_paths, truth, **hp):
    result = fit_mimosa(codes, **hp)
    h, a = result.hierarchy, result.assignments
    scores = dict(h_error=h_error(h, truth), purity=purity(true_paths, a), coverage=coverage(a))
    assert scores["h_error"] == 0, (scores, str(h))
    assert scores["purity"] >= 0.95, scores
    assert scores["coverage"] >= 0.8, scores
    return result


# ------------------------------------------------------------------ defaults
def test_defaults_cover_every_hyperparameter_of_the_paper():
    assert DEFAULTS["num_nearest_neighbors"] == 40
    assert DEFAULTS["ransac_frac"] == pytest.approx(2 / 3)
    assert DEFAULTS["eig_cumsum_thresh"] == 0.95
    assert DEFAULTS["eig_decay_thresh"] == 4
    assert DEFAULTS["cos_simil_thresh"] == 0.99
    assert DEFAULTS["contagion_num"] == 5
    resolved = _resolve(100_000, 4, DEFAULTS)
    assert (resolved["min_size_init"], resolved["min_size_merged"]) == (20, 2000)
    assert DEFAULTS["neighbor_lengthscale_mult"] == 10
    assert hier_models.MIMOSA_DEFAULTS is DEFAULTS


def test_paper_settings_per_dataset():
    assert paper_settings("spaceshapes") == {"initial_dim": 7, "cos_simil_thresh": 0.95, "contagion_num": 3}
    assert paper_settings("spaceshapes/default") == paper_settings("spaceshapes")
    assert paper_settings("chopsticks/depth2_either") == {"initial_dim": 4, "cos_simil_thresh": 0.99, "contagion_num": 5}
    widths = {c: paper_settings(f"chopsticks/{c}")["initial_dim"] for c in PAPER_SETTINGS["chopsticks"]["initial_dim"]}
    assert widths == {
        "depth2_slope": 3, "depth2_inter": 3, "depth2_either": 4, "depth2_both": 5,
        "depth3_slope": 4, "depth3_inter": 4, "depth3_either": 5, "depth3_both": 7,
        "depth3_slope_reference": 4, "depth3_inter_reference": 4, "depth3_either_reference": 5,
        "depth3_both_reference": 7,
    }
    # a resized config is the same process: the same settings
    assert paper_settings("chopsticks/depth3_both_1000_200") == paper_settings("chopsticks/depth3_both")
    # the Chopsticks options are the defaults, so mimosa(codes, **options) is mimosa(codes) there
    options = paper_settings("chopsticks/depth3_inter")
    del options["initial_dim"]
    assert all(DEFAULTS[k] == v for k, v in options.items())
    # each call returns a new dict
    paper_settings("spaceshapes")["contagion_num"] = 99
    assert PAPER_SETTINGS["spaceshapes"]["mimosa"]["contagion_num"] == 3
    with pytest.raises(ValueError, match="families \\['chopsticks', 'spaceshapes'\\]"):
        paper_settings("boxhead/boxhead1")
    with pytest.raises(ValueError, match="config 'depth4_inter' of chopsticks; known: .*chopsticks/depth2_slope"):
        paper_settings("chopsticks/depth4_inter")
    with pytest.raises(ValueError, match="config '' of chopsticks"):
        paper_settings("chopsticks")
    with pytest.raises(TypeError, match="dataset_name must be a string"):
        paper_settings(None)


@pytest.mark.parametrize(
    "n, value, expected",
    [
        (100_000, DEFAULTS["min_size_init"], 20),  # the paper's 0.02%
        (90_000, DEFAULTS["min_size_init"], 18),
        (20_000, DEFAULTS["min_size_init"], 4),
        (12_345, DEFAULTS["min_size_init"], 3),  # 2.469 rounded up
        (1_000, DEFAULTS["min_size_init"], 1),  # at least one point
        (20_000, 0.02, 400),
        (20_000, 20, 20),  # an int is a count, whatever n is
        (100, 20, 20),
        (20_000, 7.5, 8),
        (20_000, 1.0, 1),  # 1 and above are counts
    ],
)
def test_sizes_are_fractions_below_one_and_counts_from_one(n, value, expected):
    assert _resolve(n, 4, {**DEFAULTS, "min_size_init": value})["min_size_init"] == expected


def test_min_common_edge_frac():
    assert default_min_common_edge_frac(1) == pytest.approx(0.375)
    assert default_min_common_edge_frac(2) == pytest.approx(0.1875)
    assert default_min_common_edge_frac(3) == pytest.approx((1 / 8 + 1 / 16) / 2)


# ------------------------------------------------------------------ geometry
def test_neighbors_start_with_the_point_itself_even_among_duplicates():
    rng = np.random.default_rng(0)
    codes = np.r_[np.zeros((12, 2)), rng.normal(size=(30, 2)), np.ones((3, 2))]
    dist, idx = nearest_neighbors(codes, 5)
    np.testing.assert_array_equal(idx[:, 0], np.arange(len(codes)))
    assert np.all(dist[:, 0] == 0)
    assert all(len(set(row)) == 5 for row in idx)
    # a duplicate's listed neighbours are all at distance 0 from it
    assert np.all(dist[:12] == 0)


def test_intrinsic_dims_needs_both_thresholds():
    eigs = np.array(
        [
            [0.96, 0.04, 0.0, 0.0],  # 1: explains 96%, drops 24x
            [0.80, 0.16, 0.04, 0.0],  # 2: explains 96%, drops exactly 4x
            [0.80, 0.15, 0.05, 0.0],  # 3: explains 95% at d=2 but drops only 3x
            [0.40, 0.30, 0.20, 0.10],  # 4: never
            [0.0, 0.0, 0.0, 0.0],  # 4: degenerate neighbourhood
        ]
    )
    np.testing.assert_array_equal(intrinsic_dims(eigs, 0.95, 4), [1, 2, 3, 4, 4])


def test_local_svd_finds_lines_planes_and_volumes():
    rng = np.random.default_rng(1)
    n = 400
    line = np.outer(rng.uniform(-1, 1, n), [1, 2, 0, 1]) / np.sqrt(6)
    plane = rng.uniform(-1, 1, (n, 2)) @ np.array([[1, 0, 1, 0], [0, 1, 0, -1]]) / np.sqrt(2)
    blob = rng.normal(size=(n, 4))
    for codes, dim in ((line, 1), (plane, 2), (blob, 4)):
        _, idx = nearest_neighbors(codes, 40)
        bases, eigs, dims = local_svd(codes, idx, 2 / 3, 0.95, 4)
        assert np.all(dims == dim) if dim < 4 else np.mean(dims == 4) > 0.9
        np.testing.assert_allclose(eigs.sum(axis=1), 1)
        np.testing.assert_allclose(np.einsum("nij,nkj->nik", bases, bases), np.broadcast_to(np.eye(4), bases.shape), atol=1e-9)
    _, idx = nearest_neighbors(line, 40)
    bases, _, _ = local_svd(line, idx, 2 / 3, 0.95, 4)
    np.testing.assert_allclose(np.abs(bases[:, 0] @ (np.array([1, 2, 0, 1]) / np.sqrt(6))), 1, atol=1e-9)


def test_ransac_refit_ignores_off_manifold_neighbours():
    rng = np.random.default_rng(2)
    on_line = np.c_[np.linspace(-1, 1, 30), np.zeros((30, 2))]
    # a few points of a sheet beside the line, near its middle
    side = rng.choice([-1.0, 1.0], 10) * rng.uniform(0.7, 0.8, 10)
    off_line = np.c_[rng.uniform(-0.5, 0.5, 10), side, np.zeros(10)]
    codes = np.r_[on_line, off_line]
    neighbors = np.arange(40)[None, :]
    _, _, plain = local_svd(codes, neighbors, 1.0, 0.95, 4)
    bases, eigs, refit = local_svd(codes, neighbors, 2 / 3, 0.95, 4)
    assert plain[0] > 1
    assert refit[0] == 1
    assert abs(bases[0, 0, 0]) == pytest.approx(1, abs=1e-6)


def _rotation(theta, i, j, D):
    R = np.eye(D)
    R[[i, i, j, j], [i, j, i, j]] = [np.cos(theta), -np.sin(theta), np.sin(theta), np.cos(theta)]
    return R


def test_tangent_similarity_is_the_cosine_of_the_tilt():
    D = 4
    bases = np.stack([np.eye(D), np.eye(D) @ _rotation(0.3, 1, 2, D).T, np.eye(D), np.eye(D)])
    dims = np.array([2, 2, 1, 4])
    bases[3] = _rotation(1.0, 0, 3, D)
    a = np.array([0, 1, 0, 2, 3, 3])
    b = np.array([1, 0, 0, 0, 3, 3])
    sim = tangent_similarity(bases, dims, a, b)
    np.testing.assert_allclose(sim, [np.cos(0.3), np.cos(0.3), 1, 0, 1, 1], atol=1e-12)
    bases1 = np.stack([np.eye(D), _rotation(0.2, 0, 1, D).T])
    np.testing.assert_allclose(tangent_similarity(bases1, np.array([1, 1]), [0], [1]), [np.cos(0.2)])


def test_edge_mask_in_one_two_and_three_dimensions():
    # 1-D: all neighbours on one side
    rel = np.array([[[1.0], [2.0]], [[-1.0], [2.0]], [[-1.0], [-0.5]], [[0.0], [1.0]]])
    np.testing.assert_array_equal(edge_mask(rel), [True, False, True, True])
    # 2-D and 3-D grids: a point is an edge exactly when it is on the grid's boundary
    for d in (2, 3):
        axis = np.arange(5.0)
        grid = np.stack(np.meshgrid(*[axis] * d, indexing="ij"), axis=-1).reshape(-1, d)
        rel = grid[None, :, :] - grid[:, None, :]
        keep = np.linalg.norm(rel, axis=2) > 0
        rel = rel[keep].reshape(len(grid), len(grid) - 1, d)
        boundary = np.any((grid == 0) | (grid == 4), axis=1)
        np.testing.assert_array_equal(edge_mask(rel), boundary)
    # a twin at distance 0 makes a point interior; too few neighbours make it an edge
    assert not edge_mask(np.array([[[0.0, 0.0], [1.0, 0.0], [2.0, 1.0]]]))[0]
    assert edge_mask(np.array([[[1.0, 0.0], [-1.0, 0.0]]]))[0]


# ------------------------------------------------------------------ components
def test_contagion_matches_one_point_at_a_time_growth():
    rng = np.random.default_rng(3)
    n = 400
    codes = rng.uniform(size=(n, 2))
    _, neighbors = nearest_neighbors(codes, 12)
    angle = np.where(rng.uniform(size=n) < 0.5, 0.0, 1.2) + rng.uniform(0, 0.05, n)
    bases = np.zeros((n, 2, 2))
    bases[:, 0] = np.c_[np.cos(angle), np.sin(angle)]
    bases[:, 1] = np.c_[-np.sin(angle), np.cos(angle)]
    dims = np.ones(n, dtype=np.int64)
    dims[rng.uniform(size=n) < 0.05] = 2
    similar = similar_neighbors(bases, dims, neighbors, 0.99)
    for contagion in (1, 2, 3, 5):
        fast = grow_components(neighbors, similar, contagion)
        slow = pointwise_components(neighbors, bases, dims, 0.99, contagion)
        # the same partition (ids may differ)
        pairs = set(zip(fast.tolist(), slow.tolist()))
        assert len(pairs) == len(set(fast.tolist())) == len(set(slow.tolist()))
        assert len(set(fast.tolist())) > 2


def test_contagion_needs_enough_similar_members():
    # point 3 is listed by members 0, 1 and 2; point 4 only by member 0
    neighbors = np.array([[0, 1, 3, 4], [1, 0, 2, 3], [2, 1, 0, 3], [3, 0, 1, 2], [4, 0, 3, 1]])
    similar = np.ones_like(neighbors, dtype=bool)
    similar[4, :] = [True, False, False, False]
    labels = grow_components(neighbors, similar, contagion_num=3)
    # seed 0 takes its similar neighbours 1, 3 and 4 at once; point 2 is then listed
    # by members 1 and 3 only, so it joins at contagion_num 2 but not at 3
    assert labels[0] == labels[1] == labels[3] == labels[4]
    assert labels[2] != labels[0]
    labels = grow_components(neighbors, similar, contagion_num=2)
    assert len(set(labels.tolist())) == 1


def test_merge_components_links_equal_dims_above_the_edge_fraction():
    comp_dims = np.array([1, 1, 2, 2, 2, 1])
    M = np.zeros((6, 6))
    M[0, 1], M[1, 0] = 0.5, 0.3  # mean 0.4 >= 0.375: merge
    M[2, 3] = 0.4  # mean 0.2 >= 0.1875: merge
    M[3, 4] = M[4, 3] = 0.1  # below: keep apart
    M[1, 2] = M[2, 1] = 1.0  # different dimensionality: never
    M[0, 5] = M[5, 0] = 0.37  # just below the 1-D fraction
    groups = merge_components(M, comp_dims, default_min_common_edge_frac)
    assert groups[0] == groups[1] and groups[2] == groups[3]
    assert len({groups[0], groups[2], groups[4], groups[5]}) == 4


# ------------------------------------------------------------------ hierarchy
def test_enclosure_tree_prefers_direct_tightest_parent_and_breaks_ties_by_index():
    inf = np.inf
    dims = np.array([1, 1, 2, 3])
    R = np.full((4, 4), inf)
    R[2, 0] = R[2, 1] = 2.0  # tie: the lower index wins
    R[3, 0], R[3, 2] = 1.0, 5.0  # 0 is an ancestor of 2: the edge to 0 is implied
    parents = enclosure_tree(R, dims, 10.0)
    np.testing.assert_array_equal(parents, [-1, -1, 0, 2])
    R[2, 0] = 11.0  # above the threshold: 2 now sits below 1 only
    # 3 encloses 0 and 2 without one implying the other: the lowest ratio (0) wins
    np.testing.assert_array_equal(enclosure_tree(R, dims, 10.0), [-1, -1, 1, 0])


def test_enclosure_ratios_from_neighbour_lists_equal_tree_queries():
    codes, _, _ = nested(seed=11, n_curve=500, n_sheet=1000, n_volume=500)
    result = fit_mimosa(codes)
    members = members_of(result.components, len(result.component_dims))
    distances, neighbors = nearest_neighbors(codes, 40)
    listed = enclosure_ratios(codes, members, result.component_dims, neighbors, distances)
    queried = enclosure_ratios(codes, members, result.component_dims)
    np.testing.assert_allclose(listed, queried)
    assert np.isfinite(listed[np.subtract.outer(result.component_dims, result.component_dims) > 0]).all()


def test_deep_chain_builds_a_deep_hierarchy_every_time():
    dims = np.arange(1, 7)
    parents = np.array([-1, 0, 1, 2, 3, 4])
    expected = Group(("z5",))
    for level in range(4, -1, -1):
        expected = Group((f"z{level}",), Categorical(f"a{level}", (("none", Group()), (f"c{level + 1}", expected))))
    for _ in range(3):  # no state carried between calls
        h, paths = build_hierarchy(parents, dims)
        assert h == Hierarchy(expected)
        np.testing.assert_array_equal(paths, np.arange(6))
        assert [h.path_dim(p) for p in range(6)] == list(dims)


def test_several_roots_share_a_top_level_categorical():
    dims = np.array([1, 2, 2, 3])
    parents = np.array([-1, -1, 0, 2])
    h, paths = build_hierarchy(parents, dims)
    assert h.names[0] == "a0" and h.root.continuous == ()
    assert [label for label, _ in h.root.categorical.options] == ["c0", "c1"]
    assert [h.path_dim(p) for p in paths] == list(dims)
    assert h.path_signatures[paths[3]] == (1, 1, 2, 3)
    assert sorted(paths.tolist()) == list(range(4))


def test_name_dimensions_in_flat_layout_order():
    h = Hierarchy(Group(("x", "y"), Categorical("shape", (("a", Group(("p",))), ("b", Group(("z0",)))))))
    named = name_dimensions(h)
    assert named.names == ("z0", "z1", "a0", "z2", "z3")
    assert named.path_signatures == h.path_signatures
    assert name_dimensions(h, "u", "k").names == ("u0", "u1", "k0", "u2", "u3")
    with pytest.raises(ValueError, match="differ"):
        name_dimensions(h, "z", "z")


# ------------------------------------------------------------------ recovery
@pytest.mark.parametrize("make", [curve_in_sheet, book, nested], ids=lambda f: f.__name__)
def test_recovers_known_structure(make):
    codes, true_paths, truth = make()
    # the paper's 0.02% of these few thousand points is 1 or 2 points, which lets
    # slivers of interstitial points survive (purity 0.94 on curve_in_sheet); 20 is
    # what it comes to on the paper's 100,000
    result = _check_recovery(codes, true_paths, truth, min_size_init=20)
    h = result.hierarchy
    # the learned names and the component bookkeeping agree with the hierarchy
    assert all(n.startswith(("z", "a")) for n in h.names)
    for c, p in enumerate(result.component_paths):
        assert h.path_dim(p) == result.component_dims[c]
        assert np.all(result.assignments[result.components == c] == p)
    assert set(np.unique(result.assignments)) == set(range(-1, h.num_paths)) - (
        set() if (result.assignments < 0).any() else {-1}
    )


def test_curve_in_sheet_hierarchy_and_paths():
    codes, true_paths, _ = curve_in_sheet(seed=4)
    h, a = mimosa(codes)
    assert str(h) == "z0\na0\n├── none: -\n└── c1: z1"
    assert a.dtype == np.int64 and a.shape == (len(codes),)
    # the curve is the 1-D root path, the sheet its 2-D child
    assert np.mean(a[true_paths == 0] == 0) > 0.9
    assert np.mean(a[true_paths == 1] == 1) > 0.9


def test_embedded_chopsticks_codes():
    codes, paths, truth = embedded_chopsticks("chopsticks/depth2_both", 500, random_state=3)
    assert codes.shape == (500, 5) and np.all(np.isfinite(codes))
    assert paths.shape == (500,) and set(paths.tolist()) <= set(range(truth.num_paths))
    again, _, _ = embedded_chopsticks("chopsticks/depth2_both", 500, random_state=3)
    np.testing.assert_array_equal(codes, again)
    with pytest.raises(ValueError, match="spans 4 dimensions"):
        embedded_chopsticks("chopsticks/depth2_both", 500, dim=3)


def test_chopsticks_depth2_inter():
    codes, true_paths, truth = embedded_chopsticks("chopsticks/depth2_inter", 5000)
    _check_recovery(codes, true_paths, truth)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["slope", "inter", "either", "both"])
def test_chopsticks_depth2_at_scale(variant):
    config = f"chopsticks/depth2_{variant}"
    codes, true_paths, truth = embedded_chopsticks(config, 40_000)
    _check_recovery(codes, true_paths, truth)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["slope", "inter", "either", "both"])
def test_chopsticks_depth3_at_paper_scale(variant):
    config = f"chopsticks/depth3_{variant}"
    # depth-3 ``either`` series span 6 directions, one more than the paper's 5-unit AE
    codes, true_paths, truth = embedded_chopsticks(config, 90_000, dim=6 if variant == "either" else None)
    _check_recovery(codes, true_paths, truth, tree="kd")


def test_deterministic():
    codes, _, _ = book(seed=5, n_spine=600, n_page=1000)
    first = fit_mimosa(codes)
    second = fit_mimosa(codes.copy())
    assert first.hierarchy == second.hierarchy
    np.testing.assert_array_equal(first.assignments, second.assignments)
    np.testing.assert_array_equal(first.initial_components, second.initial_components)


def test_kd_tree_gives_the_same_result():
    codes, _, _ = book(seed=10, n_spine=600, n_page=1000)
    ball = fit_mimosa(codes)
    kd = fit_mimosa(codes, tree="kd")
    assert ball.hierarchy == kd.hierarchy
    np.testing.assert_array_equal(ball.assignments, kd.assignments)


def test_batched_steps_match_the_point_by_point_version():
    codes, _, _ = curve_in_sheet(seed=6, n_curve=500, n_sheet=1000)
    fast = fit_mimosa(codes)
    slow = fit_mimosa_pointwise(codes, fast.hyperparameters)
    np.testing.assert_array_equal(fast.local_dims, slow["local_dims"])
    pairs = set(zip(fast.initial_components.tolist(), slow["initial_components"].tolist()))
    assert len(pairs) == len(set(fast.initial_components.tolist())) == len(set(slow["initial_components"].tolist()))
    assert len(fast.edges) == len(slow["edges"])
    for a, b in zip(fast.edges, slow["edges"]):
        np.testing.assert_array_equal(np.sort(a), np.sort(b))
    assert fast.hierarchy == slow["hierarchy"]
    np.testing.assert_array_equal(fast.assignments, slow["assignments"])


def test_verbose_progress(capsys):
    codes, _, _ = curve_in_sheet(seed=7, n_curve=600, n_sheet=1200)
    quiet = fit_mimosa(codes)
    loud = fit_mimosa(codes, verbose=True)
    assert "MIMOSA" in capsys.readouterr().err
    np.testing.assert_array_equal(quiet.assignments, loud.assignments)
    assert set(loud.timings) >= {"neighbors", "local_svd", "build_components", "merge_components", "total"}


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "codes, message",
    [
        (np.r_[np.zeros((60, 3)), [[np.nan, 0, 0]]], "NaN or infinite"),
        (np.r_[np.zeros((60, 3)), [[0, np.inf, 0]]], "NaN or infinite"),
        (np.zeros(100), "2-D"),
        (np.zeros((100, 3, 1)), "2-D"),
        (np.zeros((100, 0)), "at least one dimension"),
        (np.zeros((39, 3)), "fewer than num_nearest_neighbors=40"),
        ([["a", "b"]] * 50, "numeric"),
    ],
)
def test_bad_codes_raise(codes, message):
    with pytest.raises(ValueError, match=message):
        mimosa(codes)


@pytest.mark.parametrize(
    "hp, message",
    [
        (dict(num_nearest_neighbors=3), "must exceed the code dimension 3"),
        (dict(num_nearest_neighbors=2.5), "num_nearest_neighbors"),
        (dict(ransac_frac=0), "ransac_frac"),
        (dict(eig_cumsum_thresh=1.5), "eig_cumsum_thresh"),
        (dict(cos_simil_thresh=-0.1), "cos_simil_thresh"),
        (dict(eig_decay_thresh=0), "eig_decay_thresh"),
        (dict(neighbor_lengthscale_mult=float("nan")), "neighbor_lengthscale_mult"),
        (dict(contagion_num=41), "contagion_num"),
        (dict(min_size_init=0), "min_size_init"),
        (dict(min_size_merged="big"), "min_size_merged"),
        (dict(min_common_edge_frac=0.2), "min_common_edge_frac"),
        (dict(min_size_merged=10_000), "no component reached min_size_merged=10000"),
        (dict(tree="brute"), "tree must be one of"),
    ],
)
def test_bad_hyperparameters_raise(hp, message):
    codes, _, _ = curve_in_sheet(seed=8, n_curve=300, n_sheet=600)
    with pytest.raises(ValueError, match=message):
        mimosa(codes, **hp)


def test_unknown_hyperparameter_is_a_type_error():
    codes, _, _ = curve_in_sheet(seed=9, n_curve=300, n_sheet=600)
    with pytest.raises(TypeError):
        mimosa(codes, cos_sim_thresh=0.9)
