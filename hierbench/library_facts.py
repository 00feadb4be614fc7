"""Facts of the model library that the commands' help shows, read from its source.

Importing :mod:`hier_models` loads TensorFlow (about 8 s on two cores), and a
command's ``--help`` should answer at once. So the help and the run defaults read the
few facts they show (the model names, each model's hyperparameters, the defaults of
the recipes) from the library's source files, parsed with :mod:`ast` and never
executed. Nothing is copied: each fact keeps its one home in the library, and
``tests/test_cli_help.py`` checks every value read here against the imported library.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

__all__ = ["constant", "hyperparameter_names", "mimosa_options", "model_names"]

#: the module that names the models (:mod:`hier_models.registry`)
REGISTRY = "hier_models.registry"


@functools.cache
def _module(name: str) -> ast.Module:
    """The parsed source of module ``name`` (dotted), found without importing its package."""
    top, *rest = name.split(".")
    spec = importlib.util.find_spec(top)  # a top-level name: finds, does not import
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package {top!r} is not installed")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*rest)
    source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return ast.parse(source.read_text(encoding="utf-8"), filename=str(source))


def _assigned(module: str, name: str) -> ast.expr:
    for node in _module(module).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.value
    raise LookupError(f"{module} assigns no {name}")


def constant(module: str, name: str):
    """The literal value that ``module`` assigns to ``name`` at its top level."""
    return ast.literal_eval(_assigned(module, name))


def _imported_from(module: str, name: str) -> str:
    """The module from which ``module`` imports ``name`` (``from X import name``)."""
    for node in _module(module).body:
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            return node.module
    raise LookupError(f"{module} imports no {name}")


def _flat_model_classes() -> list[str]:
    """The classes in :data:`hier_models.registry.MODELS`, in its order (the tuple its
    dict comprehension runs over)."""
    models = _assigned(REGISTRY, "MODELS")
    return [element.id for element in models.generators[0].iter.elts]


@functools.cache
def model_names() -> tuple[str, ...]:
    """:data:`hier_models.registry.MODEL_NAMES`: the flat models, then the whole method."""
    return (*_flat_model_classes(), constant(REGISTRY, "HIERARCHICAL"))


def _init_arguments(module: str, cls: str) -> list[str]:
    """Keyword arguments of ``cls.__init__`` and of the library's base classes it
    forwards to, the class's own first (the order of the class's method resolution)."""
    node = next(n for n in _module(module).body if isinstance(n, ast.ClassDef) and n.name == cls)
    names = []
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is not None:
        names += [a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)]
    for base in node.bases:
        if not isinstance(base, ast.Name):
            continue
        base_module = module if any(isinstance(n, ast.ClassDef) and n.name == base.id for n in _module(module).body) \
            else _imported_from(module, base.id)
        if base_module.startswith("hier_models"):
            names += _init_arguments(base_module, base.id)
    return names


@functools.cache
def mimosa_options() -> tuple[str, ...]:
    """:data:`hier_models.registry.MIMOSA_OPTIONS`: MIMOSA's defaults that are values
    (not functions), then ``tree``."""
    defaults = _assigned("hier_models._mimosa.settings", "DEFAULTS")
    return tuple(k.arg for k in defaults.keywords if isinstance(k.value, (ast.Constant, ast.BinOp))) + ("tree",)


@functools.cache
def hyperparameter_names(model: str) -> tuple[str, ...]:
    """The names of :func:`hier_models.registry.model_parameters` of ``model``, sorted."""
    internal = constant(REGISTRY, "_NOT_HYPERPARAMETERS")
    if model == constant(REGISTRY, "HIERARCHICAL"):
        cls, extra = "COFHAE", (*mimosa_options(), "initial_dim")
    else:
        cls, extra = model, tuple(constant(REGISTRY, "TRAINING_PARAMETERS"))
    if cls not in (*_flat_model_classes(), "COFHAE"):
        raise ValueError(f"unknown model {model!r}; choose from {', '.join(model_names())}")
    own = _init_arguments(_imported_from(REGISTRY, cls), cls)
    return tuple(sorted({n for n in own if n not in internal} | set(extra)))
