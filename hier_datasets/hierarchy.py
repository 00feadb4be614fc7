"""Dimension hierarchies (Ross & Doshi-Velez 2021, section 3).

A dimension hierarchy is a tree of *groups*. A group holds any number of named
continuous dimensions and at most one categorical variable; each option of the
categorical leads to a child group (possibly empty). A data point activates exactly
the dimensions of the groups on its *path* from the root to a leaf.

Every hierarchy has a *flat layout*: the vector of all its dimensions in pre-order
(a group's continuous dimensions, then its categorical, then the layouts of the
option groups in option order). One encoding serves the datasets' factors, the codes
that ``hier_metrics.r4c`` scores and COFHAE's ``encode`` returns: a categorical holds
its option index plus one where it is active and 0 where it is inactive (the reference
implementation's convention), so that "inactive" is never confused with the first
option; the values of inactive continuous dimensions are not read (the datasets and
COFHAE store 0). The true factors are therefore a valid code of their own hierarchy.

This module is pure Python + numpy so that code from any framework can use it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["Group", "Categorical", "Hierarchy"]


@dataclass(frozen=True)
class Categorical:
    """A categorical variable; ``options`` pairs each option label with its child group."""

    name: str
    options: tuple[tuple[str, "Group"], ...]

    def __post_init__(self):
        if not self.options:
            raise ValueError(f"categorical {self.name!r} needs at least one option")
        labels = [label for label, _ in self.options]
        if len(set(labels)) != len(labels):
            raise ValueError(f"categorical {self.name!r} has repeated option labels {labels}")


@dataclass(frozen=True)
class Group:
    """A node of the hierarchy: continuous dimensions plus an optional categorical."""

    continuous: tuple[str, ...] = ()
    categorical: Categorical | None = None

    def min_dim(self) -> int:
        """Minimum number of continuous dimensions active at or below this group."""
        below = 0
        if self.categorical is not None:
            below = min(child.min_dim() for _, child in self.categorical.options)
        return len(self.continuous) + below


@dataclass(frozen=True)
class _Path:
    """A root-to-leaf path: the groups it visits and the (categorical, option) choices."""

    groups: tuple[Group, ...]
    choices: tuple[tuple[str, int], ...]


class Hierarchy:
    """An immutable dimension hierarchy.

    Build it from a root :class:`Group`, from JSON (:meth:`from_json`) or from the
    reference implementation's nested list-of-dicts (:meth:`from_reference`).

    Example::

        >>> h = Hierarchy(Group(("x",), Categorical("shape", (
        ...     ("disc", Group(("radius",))), ("dot", Group())))))
        >>> h.names
        ('x', 'shape', 'radius')
        >>> h.path_names
        ('shape=disc', 'shape=dot')
    """

    def __init__(self, root: Group):
        if not isinstance(root, Group):
            raise TypeError(f"root must be a Group, got {type(root).__name__}")
        self._root = root
        names = self.names
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"dimension names must be unique; repeated: {duplicated}")

    @classmethod
    def flat(cls, num_dims: int, prefix: str = "z") -> "Hierarchy":
        """The hierarchy of a flat code: one group of ``num_dims`` always-active
        continuous dimensions named ``z0``, ``z1``, ... (``prefix`` then the index).

        Example::

            >>> Hierarchy.flat(3).names
            ('z0', 'z1', 'z2')
        """
        if isinstance(num_dims, bool) or not isinstance(num_dims, (int, np.integer)) or num_dims < 0:
            raise ValueError(f"num_dims must be an integer >= 0, got {num_dims!r}")
        return cls(Group(tuple(f"{prefix}{j}" for j in range(int(num_dims)))))

    # ----------------------------------------------------------------- layout
    @property
    def root(self) -> Group:
        return self._root

    def _walk(self) -> Iterator[tuple[str, str, tuple[tuple[str, int], ...], int]]:
        """Yield (name, kind, conditions, num_options) in flat-layout order."""

        def visit(group: Group, conditions):
            for name in group.continuous:
                yield name, "continuous", conditions, 0
            cat = group.categorical
            if cat is not None:
                yield cat.name, "categorical", conditions, len(cat.options)
                for k, (_, child) in enumerate(cat.options):
                    yield from visit(child, conditions + ((cat.name, k),))

        yield from visit(self._root, ())

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Dimension names in flat-layout order."""
        return tuple(name for name, *_ in self._walk())

    @cached_property
    def kinds(self) -> tuple[str, ...]:
        """``"continuous"`` or ``"categorical"`` for each dimension."""
        return tuple(kind for _, kind, _, _ in self._walk())

    @cached_property
    def num_options(self) -> np.ndarray:
        """Number of options of each categorical dimension (0 for continuous ones)."""
        return np.array([n for *_, n in self._walk()], dtype=np.int64)

    @property
    def num_dims(self) -> int:
        return len(self.names)

    @cached_property
    def is_categorical(self) -> np.ndarray:
        """Boolean mask over the flat layout: True for categorical dimensions."""
        return np.array([k == "categorical" for k in self.kinds])

    def index(self, name: str) -> int:
        """Position of dimension ``name`` in the flat layout."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"unknown dimension {name!r}; dimensions are {list(self.names)}") from None

    @cached_property
    def conditions(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """For each dimension, the (categorical index, option) pairs that activate it."""
        return tuple(
            tuple((self.index(cat), k) for cat, k in conds) for _, _, conds, _ in self._walk()
        )

    # ------------------------------------------------------------------ paths
    @cached_property
    def _paths(self) -> tuple[_Path, ...]:
        def visit(group: Group, groups, choices):
            groups = groups + (group,)
            cat = group.categorical
            if cat is None:
                yield _Path(groups, choices)
                return
            for k, (_, child) in enumerate(cat.options):
                yield from visit(child, groups, choices + ((cat.name, k),))

        return tuple(visit(self._root, (), ()))

    @property
    def num_paths(self) -> int:
        return len(self._paths)

    @cached_property
    def path_names(self) -> tuple[str, ...]:
        """Readable names of the paths, e.g. ``"shape=ship, jet=none"``."""
        labels = []
        for path in self._paths:
            parts = []
            for group, (cat, k) in zip(path.groups, path.choices):
                parts.append(f"{cat}={group.categorical.options[k][0]}")
            labels.append(", ".join(parts) or "(root)")
        return tuple(labels)

    @cached_property
    def path_active(self) -> np.ndarray:
        """(num_paths, num_dims) bool: which dimensions each path activates."""
        out = np.zeros((self.num_paths, self.num_dims), dtype=bool)
        for p, path in enumerate(self._paths):
            chosen = set(path.choices)
            for d, (_, _, conds, _) in enumerate(self._walk()):
                out[p, d] = all(c in chosen for c in conds)
        return out

    @cached_property
    def path_choices(self) -> np.ndarray:
        """(num_paths, num_dims) int: each path's categorical values, -1 elsewhere."""
        out = np.full((self.num_paths, self.num_dims), -1, dtype=np.int64)
        for p, path in enumerate(self._paths):
            for cat, k in path.choices:
                out[p, self.index(cat)] = k
        return out

    def active_dims(self, path: int) -> tuple[str, ...]:
        """Names of the dimensions active on path number ``path``."""
        self._check_path(path)
        return tuple(n for n, on in zip(self.names, self.path_active[path]) if on)

    def path_dim(self, path: int) -> int:
        """Number of continuous dimensions active on a path (its intrinsic dimensionality)."""
        self._check_path(path)
        return int(np.sum(self.path_active[path] & ~self.is_categorical))

    @cached_property
    def path_signatures(self) -> tuple[tuple[int, ...], ...]:
        """Minimum downstream dimensionality at each node along each path.

        For the i-th group on a path the entry is the smallest total number of
        continuous dimensions of any complete path through that group (ancestors'
        dimensions included). Two hierarchies that differ only by moving continuous
        dimensions up ("merge up") or down ("push down") have the same signatures,
        which is what the H-error compares.
        """
        sigs = []
        for path in self._paths:
            above, sig = 0, []
            for group in path.groups:
                sig.append(above + group.min_dim())
                above += len(group.continuous)
            sigs.append(tuple(sig))
        return tuple(sigs)

    def _check_path(self, path: int) -> None:
        if not 0 <= int(path) < self.num_paths:
            raise ValueError(f"path must be in [0, {self.num_paths}), got {path}")

    # ------------------------------------------------------- values -> labels
    def _as_values(self, values, name: str) -> np.ndarray:
        arr = np.asarray(values, dtype=np.float64)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.num_dims:
            raise ValueError(
                f"{name} must have shape (n, {self.num_dims}) in the layout {list(self.names)}, "
                f"got {np.shape(values)}"
            )
        return arr

    def path_index(self, values) -> np.ndarray:
        """Index of each row's path, read from its categorical values.

        Args:
          values: (n, num_dims) or (num_dims,) in the flat layout, factors or codes: a
            categorical holds its option index + 1 where it is active and 0 where it
            is inactive (see the module docstring).

        Raises:
          ValueError: naming the offending row and dimension when an active
            categorical's value is not one of its options (1..number of options) or
            an inactive categorical is not 0.
        """
        arr = self._as_values(values, "values")
        cats = np.flatnonzero(self.is_categorical)
        out = np.full(len(arr), -1, dtype=np.int64)
        for p in range(self.num_paths):
            match = np.all(arr[:, cats] == self.path_choices[p, cats] + 1, axis=1)
            out[match & (out < 0)] = p
        bad = np.flatnonzero(out < 0)
        if bad.size:
            row = arr[bad[0]]
            for d in cats:
                on = all(row[c] == k + 1 for c, k in self.conditions[d])
                if on and not (row[d] == int(row[d]) and 1 <= row[d] <= self.num_options[d]):
                    raise ValueError(
                        f"values row {bad[0]}: categorical {self.names[d]!r} is {row[d]:g}, allowed are its option "
                        f"indices + 1, 1..{self.num_options[d]} (0 means inactive, and it is active on this row)"
                    )
                if not on and row[d] != 0:
                    raise ValueError(
                        f"values row {bad[0]}: categorical {self.names[d]!r} is inactive on this path "
                        f"and must be 0, got {row[d]:g}"
                    )
        return out

    def activity_mask(self, values) -> np.ndarray:
        """(n, num_dims) bool mask of the dimensions active for each row (values as for
        :meth:`path_index`)."""
        return self.path_active[self.path_index(values)]

    # ---------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        def enc(group: Group):
            d: dict[str, Any] = {"continuous": list(group.continuous)}
            if group.categorical is not None:
                d["categorical"] = {
                    "name": group.categorical.name,
                    "options": [{"label": lab, "group": enc(g)} for lab, g in group.categorical.options],
                }
            return d

        return enc(self._root)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Hierarchy":
        def dec(d):
            unknown = set(d) - {"continuous", "categorical"}
            if unknown:
                raise ValueError(f"unknown hierarchy keys {sorted(unknown)}; allowed: continuous, categorical")
            cat = d.get("categorical")
            if cat is not None:
                cat = Categorical(cat["name"], tuple((o["label"], dec(o["group"])) for o in cat["options"]))
            return Group(tuple(d.get("continuous", ())), cat)

        return cls(dec(data))

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str) -> "Hierarchy":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_reference(cls, spec: Sequence[dict], names: Sequence[str] | None = None) -> "Hierarchy":
        """Import the reference implementation's nested list-of-dicts format.

        Each list is a group: ``{"type": "continuous"}`` entries and at most one
        ``{"type": "categorical", "options": [group, ...]}`` entry. Dimensions are
        named ``z0, z1, ...`` (continuous) and ``a0, a1, ...`` (categorical) in
        flat-layout order unless ``names`` gives every name in that order; option
        labels are the option indices.
        """
        counters = {"continuous": 0, "categorical": 0}

        def dec(nodes) -> Group:
            if not isinstance(nodes, (list, tuple)):
                raise ValueError(f"a reference group must be a list of dicts, got {nodes!r}")
            kinds = [n.get("type") if isinstance(n, dict) else None for n in nodes]
            bad = [k for k in kinds if k not in ("continuous", "categorical")]
            if bad:
                raise ValueError(f"reference node type must be 'continuous' or 'categorical', got {bad[0]!r}")
            if kinds.count("categorical") > 1:
                raise ValueError("a reference group may hold at most one categorical node")
            conts = []
            for _ in range(kinds.count("continuous")):
                conts.append(f"z{counters['continuous']}")
                counters["continuous"] += 1
            cat = None
            if "categorical" in kinds:
                node = nodes[kinds.index("categorical")]
                name = f"a{counters['categorical']}"
                counters["categorical"] += 1
                cat = Categorical(name, tuple((str(k), dec(o)) for k, o in enumerate(node["options"])))
            return Group(tuple(conts), cat)

        h = cls(dec(spec))
        if names is None:
            return h
        if len(names) != h.num_dims:
            raise ValueError(f"names must list all {h.num_dims} dimensions, got {len(names)}")
        return h.rename(dict(zip(h.names, names)))

    def rename(self, mapping: dict[str, str]) -> "Hierarchy":
        """A copy with dimensions renamed by ``mapping`` (old name -> new name)."""

        def ren(group: Group) -> Group:
            cat = group.categorical
            if cat is not None:
                cat = Categorical(mapping.get(cat.name, cat.name), tuple((lab, ren(g)) for lab, g in cat.options))
            return Group(tuple(mapping.get(n, n) for n in group.continuous), cat)

        return Hierarchy(ren(self._root))

    def to_reference(self) -> list[dict]:
        """Export to the reference implementation's nested list-of-dicts format."""

        def enc(group: Group):
            nodes: list[dict] = [{"type": "continuous"} for _ in group.continuous]
            if group.categorical is not None:
                nodes.append({"type": "categorical", "options": [enc(g) for _, g in group.categorical.options]})
            return nodes

        return enc(self._root)

    # ------------------------------------------------------------------ misc
    def __eq__(self, other) -> bool:
        return isinstance(other, Hierarchy) and self._root == other._root

    def __hash__(self) -> int:
        return hash(self._root)

    def __repr__(self) -> str:
        return f"Hierarchy({self.num_dims} dims, {self.num_paths} paths: {list(self.names)})"

    def __str__(self) -> str:
        """A readable text tree, e.g.::

            x, y
            shape
            ├── moon: phase
            └── ship: angle
                jet
                ├── none: -
                └── jet: jetlen
        """
        lines: list[str] = []
        if self._root.continuous:
            lines.append(", ".join(self._root.continuous))

        def draw(group: Group, indent: str) -> None:
            cat = group.categorical
            if cat is None:
                return
            lines.append(indent + cat.name)
            for k, (label, child) in enumerate(cat.options):
                last = k == len(cat.options) - 1
                branch, cont = ("└── ", "    ") if last else ("├── ", "│   ")
                lines.append(indent + branch + f"{label}: " + (", ".join(child.continuous) or "-"))
                draw(child, indent + cont)

        draw(self._root, "")
        return "\n".join(lines)
