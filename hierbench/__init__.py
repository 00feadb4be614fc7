"""hierbench: the application on top of the three libraries.

The ``hierbench`` command line (:mod:`hierbench.cli`, one argparse module per
command) and what it needs beyond the libraries:

- :mod:`~hierbench.datasets`: dataset names (``family/config[_TRAIN_TEST]``) and
  building them;
- :mod:`~hierbench.options`: model names and ``--set`` hyperparameters;
- :mod:`~hierbench.models` and :mod:`~hierbench.scoring`: the library recipes
  (:mod:`hier_models.recipes`) with the command line's checks, and model folders;
- :mod:`~hierbench.evaluation`: ``hierbench evaluate``'s work;
- :mod:`~hierbench.job`: the main job, ``hierbench run``;
- :mod:`~hierbench.run_folders`: the run folders it writes;
- :mod:`~hierbench.report`, :mod:`~hierbench.pages`, :mod:`~hierbench.figures`:
  the report (Markdown, HTML, matplotlib figures);
- :mod:`~hierbench.files`: atomic writes and output checks;
- :mod:`~hierbench.errors`: :class:`~hierbench.errors.CommandError`.

Imports go one way: hierbench -> hier_models -> hier_metrics -> hier_datasets; no
library imports this package or matplotlib.
"""
