"""The one error class of the command line."""
from __future__ import annotations

__all__ = ["CommandError"]


class CommandError(Exception):
    """Bad input to a command; the message says what is wrong and what to do.

    ``hierbench`` prints it as one line and exits with status 2; any other exception
    is a bug and surfaces with its traceback.
    """
