"""TensorFlow Datasets when it is installed, else None.

The generators, the ``Hierarchy`` and ``hier_metrics`` work without TensorFlow or
TFDS (e.g. beside PyTorch or JAX); the TFDS builders are registered only where TFDS
can be imported. Importing TFDS does not import TensorFlow.
"""
try:
    import tensorflow_datasets as tfds
except ImportError:
    tfds = None
