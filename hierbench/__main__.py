"""``python -m hierbench``: the same as the ``hierbench`` command."""
import sys

from hierbench.cli import main

sys.exit(main())
