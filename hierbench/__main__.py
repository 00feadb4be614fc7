"""``python -m hier_models.cli``: the same as ``hierbench``."""
import sys

from hier_models.cli import main

sys.exit(main())
