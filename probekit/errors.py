"""User-facing errors: the CLI prints each as one line (no traceback) and exits non-zero."""


class ProbekitError(Exception):
    """Bad input from the user (arguments, params, templates, data, sources); the message says what to fix."""


class UsageError(ProbekitError):
    """A command-line argument is wrong or names something that does not exist."""


class ParamsError(ProbekitError, ValueError):
    """A params file (or a probe's built-in defaults) is invalid; the message names the file and the key."""


class DataError(ProbekitError, ValueError):
    """A data file is malformed; the message names the file and the line."""
