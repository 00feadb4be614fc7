"""What ``hier_models`` needs beyond the light install, checked on import.

The light install of hierbench (numpy, scipy, scikit-learn) holds ``hier_metrics``,
the generators and :class:`~hier_datasets.Hierarchy`; the models and the command
line need the ``tf`` extra. Importing this module raises one ImportError that says
so, instead of the first missing import deep inside a model module.
"""
import importlib

from hier_datasets._tfds import INSTALL_HINT

for _module in ("tensorflow", "keras", "tqdm"):
    try:
        importlib.import_module(_module)
    except ImportError as err:
        raise ImportError(
            f"hier_models needs TensorFlow, Keras 3 and tqdm ({_module} cannot be imported: {err}); the light "
            f"install of hierbench has hier_metrics and the generators only: {INSTALL_HINT}"
        ) from None  # the message names the missing module; its own traceback adds nothing
