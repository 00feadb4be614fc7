"""hier_datasets: hierarchical disentanglement benchmarks as TensorFlow Datasets.

Importing the package registers the TFDS builders (``chopsticks``, ``spaceshapes``,
``boxhead``) so that ``tfds.load("chopsticks/depth2_either")`` works; TensorFlow is
only imported when a dataset is built or loaded, Open3D and PyVista only when a
Boxhead image is rendered. Where TFDS is not installed (a PyTorch or JAX
environment) the generators (:func:`ground_truth`) and :class:`Hierarchy` work all
the same and no builder is registered.

:func:`build` builds (or reuses) a dataset by name in a TFDS data dir, on Apache
Beam with ``beam_options``; :func:`data_source` gives random access to its examples
(for PyTorch, JAX and Grain).
"""
# importing the families registers them (Open3D and PyVista load on Boxhead's first render)
from hier_datasets import boxhead, chopsticks, spaceshapes  # noqa: F401
from hier_datasets.data_source import DataSource, data_source
from hier_datasets.ground_truth import GroundTruth, available, ground_truth
from hier_datasets.hierarchy import Categorical, Group, Hierarchy
from hier_datasets.loading import build
from hier_datasets.validation import check_public_keywords

__all__ = [
    "Categorical", "Group", "Hierarchy", "GroundTruth", "DataSource", "available", "build", "data_source", "ground_truth",
]

check_public_keywords(globals())  # a misspelt keyword lists the options taken
