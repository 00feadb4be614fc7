"""Studies and speed benchmarks of hierbench, each a module run from the repository
root with ``python -m benchmarks.NAME`` (``--help`` for its options); results go to
``docs/results/NAME.json`` and ``NAME.md``.

:mod:`benchmarks.study` holds what the studies share (results paths, records,
mean ± sample std, the notes kept when a page is redrawn, machine info);
:mod:`benchmarks.reference` the reference implementations that speed benchmarks and
tests compare against. The studies import the libraries' public API only.
"""
