"""TensorFlow Datasets when it is installed, else None.

The generators, the ``Hierarchy`` and ``hier_metrics`` work without TensorFlow or
TFDS (e.g. beside PyTorch or JAX); the TFDS builders are registered only where TFDS
can be imported. Importing TFDS does not import TensorFlow.
"""
try:
    import tensorflow_datasets as tfds
except ImportError:
    tfds = None

#: how to add what the light install (numpy / scipy / scikit-learn only) leaves out
INSTALL_HINT = "pip install 'hierbench[tf]'"


def require_tfds(what: str):
    """The ``tensorflow_datasets`` module, or ImportError saying that ``what`` needs it."""
    if tfds is None:
        raise ImportError(f"{what} needs TensorFlow Datasets, which the light install leaves out: {INSTALL_HINT}")
    return tfds
