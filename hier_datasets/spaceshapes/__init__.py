"""Spaceshapes: the renderer (pure numpy) and its TFDS builder."""
from hier_datasets.spaceshapes.generator import HIERARCHY, SHAPES, Spaceshapes, render

__all__ = ["HIERARCHY", "SHAPES", "Spaceshapes", "render"]
from hier_datasets._tfds import tfds  # noqa: E402

if tfds is not None:
    from hier_datasets.spaceshapes.builder import SpaceshapesBuilder  # noqa: F401  (registers "spaceshapes")

    __all__ += ["SpaceshapesBuilder"]
