"""Enclosure between components, the component tree, and the dimension hierarchy."""
from __future__ import annotations

import numpy as np

from hier_datasets.hierarchy import Categorical, Group, Hierarchy
from hier_models._mimosa._geometry import make_tree

EMPTY_OPTION = "none"


def enclosure_ratios(
    codes: np.ndarray,
    members: list[np.ndarray],
    comp_dims: np.ndarray,
    neighbors: np.ndarray | None = None,
    distances: np.ndarray | None = None,
    tree: str = "ball",
) -> np.ndarray:
    """(C, C) matrix R: R[hi, lo] = (mean distance from component lo's points to their
    nearest point of hi) / (hi's neighbour lengthscale), for dim(hi) > dim(lo); inf
    elsewhere. The lengthscale is the mean distance of hi's points to their nearest
    other point of hi.

    With the global neighbour lists (``neighbors``, ``distances``, sorted, the point
    itself first), a point's nearest member of a component is read from its list when
    the list holds one; only the rest are queried in the component's tree.
    """
    C = len(members)
    R = np.full((C, C), np.inf)
    label = None
    if neighbors is not None:
        label = np.full(len(codes), -1, dtype=np.int64)
        for c, pts in enumerate(members):
            label[pts] = c

    def nearest_in(index, c: int, pts: np.ndarray, other: bool) -> np.ndarray:
        """Distance from each of ``pts`` to its nearest point of component ``c``
        (``other``: excluding the point itself, for ``pts`` inside ``c``)."""
        out = np.empty(pts.size)
        listed = np.zeros(pts.size, dtype=bool)
        if label is not None:
            start = 1 if other else 0
            hit = label[neighbors[pts, start:]] == c
            listed = hit.any(axis=1)
            out[listed] = distances[pts[listed], start + hit.argmax(axis=1)[listed]]
        if not listed.all():
            k = 2 if other else 1
            out[~listed] = index.query(codes[pts[~listed]], k=k)[0][:, k - 1]
        return out

    for hi in range(C):
        lower = np.flatnonzero(comp_dims < comp_dims[hi])
        pts = members[hi]
        if lower.size == 0 or pts.size < 2:
            continue
        index = make_tree(codes[pts], tree)
        lengthscale = nearest_in(index, hi, pts, other=True).mean()
        for lo in lower:
            dist = nearest_in(index, hi, members[lo], other=False).mean()
            with np.errstate(divide="ignore", invalid="ignore"):
                R[hi, lo] = dist / lengthscale
    return R


def _ancestors(parent: np.ndarray, c: int) -> set[int]:
    out = set()
    c = parent[c]
    while c >= 0:
        out.add(int(c))
        c = parent[c]
    return out


def enclosure_tree(R: np.ndarray, comp_dims: np.ndarray, neighbor_lengthscale_mult: float) -> np.ndarray:
    """Parent of each component in the enclosure tree (-1 for roots).

    Components are visited by increasing dimensionality (then index). Each one may
    enclose lower-dimensional components with ratio at most the threshold; enclosed
    components that are ancestors of another enclosed component are dropped (the edge
    to them is implied), and among the rest the lowest ratio wins, ties going to the
    lower component index.
    """
    C = len(comp_dims)
    parent = np.full(C, -1, dtype=np.int64)
    for c in np.argsort(comp_dims, kind="stable"):
        enclosed = [int(o) for o in np.flatnonzero(R[c] <= neighbor_lengthscale_mult)]
        if not enclosed:
            continue
        implied = set().union(*(_ancestors(parent, o) for o in enclosed))
        direct = [o for o in enclosed if o not in implied]
        parent[c] = min(direct, key=lambda o: (R[c, o], o))
    return parent


def name_dimensions(hierarchy: Hierarchy, continuous: str = "z", categorical: str = "a") -> Hierarchy:
    """A copy whose dimensions are renamed in flat-layout order: continuous ones
    ``z0, z1, ...`` and categorical ones ``a0, a1, ...`` (prefixes configurable).
    Option labels are kept."""
    counters = {"continuous": 0, "categorical": 0}
    prefix = {"continuous": continuous, "categorical": categorical}
    mapping = {}
    for name, kind in zip(hierarchy.names, hierarchy.kinds):
        mapping[name] = f"{prefix[kind]}{counters[kind]}"
        counters[kind] += 1
    if len(set(mapping.values())) != len(mapping):
        raise ValueError(f"prefixes {continuous!r} and {categorical!r} must differ")
    # rename through unique temporaries so that old and new names may overlap
    temp = {old: f"\0{i}" for i, old in enumerate(mapping)}
    return hierarchy.rename(temp).rename({temp[old]: new for old, new in mapping.items()})


def component_hierarchy(
    codes: np.ndarray,
    members: list[np.ndarray],
    comp_dims: np.ndarray,
    neighbor_lengthscale_mult: float,
    neighbors: np.ndarray | None = None,
    distances: np.ndarray | None = None,
    tree: str = "ball",
) -> tuple[Hierarchy, np.ndarray, np.ndarray]:
    """Algorithm 7 on final components: ``(hierarchy, path of each component, parents)``."""
    R = enclosure_ratios(codes, members, comp_dims, neighbors, distances, tree)
    parents = enclosure_tree(R, comp_dims, neighbor_lengthscale_mult)
    hierarchy, paths = build_hierarchy(parents, comp_dims)
    return hierarchy, paths, parents


def build_hierarchy(parent: np.ndarray, comp_dims: np.ndarray) -> tuple[Hierarchy, np.ndarray]:
    """The dimension hierarchy of a component tree, and the path index of each component.

    A component of dimensionality d below ancestors with e dimensions in total adds
    d - e continuous dimensions; a component with children adds a categorical whose
    first option (``none``) is the component itself and whose other options
    (``c<index>``) are its children. Several roots share a top-level categorical. Children
    keep the order of component indices.
    """
    C = len(comp_dims)
    children = [[] for _ in range(C)]
    for c in range(C):
        if parent[c] >= 0:
            children[parent[c]].append(c)
    path_of = np.full(C, -1, dtype=np.int64)
    counter = [0, 0]  # temporary unique names; renamed below
    paths: list[int] = []

    def cont(k: int) -> tuple[str, ...]:
        names = tuple(f"c{counter[0] + i}" for i in range(k))
        counter[0] += k
        return names

    def cat_name() -> str:
        counter[1] += 1
        return f"k{counter[1] - 1}"

    def group(c: int, above: int) -> Group:
        dims = cont(int(comp_dims[c]) - above)
        if not children[c]:
            paths.append(c)
            return Group(dims)
        name = cat_name()
        paths.append(c)  # the ``none`` option comes first in path order
        options = [(EMPTY_OPTION, Group())]
        options += [(f"c{o}", group(o, int(comp_dims[c]))) for o in children[c]]
        return Group(dims, Categorical(name, tuple(options)))

    roots = [c for c in range(C) if parent[c] < 0]
    if len(roots) == 1:
        root = group(roots[0], 0)
    else:
        name = cat_name()
        root = Group((), Categorical(name, tuple((f"c{r}", group(r, 0)) for r in roots)))
    hierarchy = name_dimensions(Hierarchy(root))
    path_of[np.array(paths, dtype=np.int64)] = np.arange(len(paths))
    if hierarchy.num_paths != C or (path_of < 0).any():
        raise AssertionError("every component must own exactly one path")
    return hierarchy, path_of
