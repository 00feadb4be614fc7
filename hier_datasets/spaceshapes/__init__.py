"""Spaceshapes: the renderer (pure numpy) and its TFDS builder."""
from hier_datasets.spaceshapes.generator import HIERARCHY, SHAPES, Spaceshapes, render

__all__ = ["HIERARCHY", "SHAPES", "Spaceshapes", "render"]
