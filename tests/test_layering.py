"""Imports go one way: hierbench -> hier_models -> hier_metrics -> hier_datasets; no
library imports the application, matplotlib or a benchmark (read from the source, so
lazy imports inside functions count too)."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: what each package may not import (the packages above it, and what no library needs)
FORBIDDEN = {
    "hier_datasets": {"hier_models", "hier_metrics", "hierbench", "benchmarks", "matplotlib"},
    "hier_metrics": {"hier_models", "hierbench", "benchmarks", "matplotlib", "tensorflow", "keras"},
    "hier_models": {"hierbench", "benchmarks", "matplotlib"},
    "hierbench": {"benchmarks"},
}


def _imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_go_one_way(package):
    wrong = {
        str(path.relative_to(REPO)): sorted(_imported(path) & FORBIDDEN[package])
        for path in sorted((REPO / package).rglob("*.py"))
    }
    assert not {k: v for k, v in wrong.items() if v}
