"""What the command handlers share (converters/cli.py and the `view` and `--format model-explorer`
handlers in converters/viz/view.py): the error shown to the user with its exit code, and the
--input-shape / --dim pins read from the parsed arguments. Library modules raise their own errors;
only handlers raise CliError."""
from __future__ import annotations

from .exit_codes import EXIT_INVALID


class CliError(Exception):
    """An error to show to the user (one line saying what happened and what to do, no traceback) with an exit
    code; `details` are printed after it, one indented line each."""

    def __init__(self, message: str, exit_code: int = EXIT_INVALID, details=()):
        super().__init__(message)
        self.exit_code = exit_code
        self.details = list(details)


def input_shapes(args) -> dict:
    """The --input-shape pins; a malformed one is a usage error."""
    from .load import parse_input_shapes
    try:
        return parse_input_shapes(args.input_shape)
    except ValueError as e:
        raise CliError(str(e))


def dims(args) -> dict:
    """The --dim pins; a malformed one is a usage error."""
    from .load import parse_dims
    try:
        return parse_dims(args.dim)
    except ValueError as e:
        raise CliError(str(e))
