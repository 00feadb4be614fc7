"""Reference implementations that speed benchmarks and tests compare against; not part
of the installed packages.

- :mod:`~benchmarks.reference.mimosa_pointwise`: MIMOSA point by point, the oracle and
  the speed baseline of :func:`hier_models.fit_mimosa`;
- :mod:`~benchmarks.reference.synthetic`: smoothly embedded Chopsticks codes with
  known structure, without training an autoencoder.
"""
