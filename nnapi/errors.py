"""The one exception type of the project's NNAPI layer."""
from __future__ import annotations

from .codes import ResultCode


class NnapiError(Exception):
    """An NNAPI call failed: `.code` is the ResultCode the NDK would return.

    The message names the operand or operation the error is about.
    """

    def __init__(self, code: ResultCode, message: str, *, operand: int | None = None,
                 operation: int | None = None):
        self.code = ResultCode(code)
        self.message = message
        self.operand = operand
        self.operation = operation
        super().__init__(f"{self.code.name}: {message}")


def bad_data(message: str, **where) -> NnapiError:
    return NnapiError(ResultCode.BAD_DATA, message, **where)


def bad_state(message: str, **where) -> NnapiError:
    return NnapiError(ResultCode.BAD_STATE, message, **where)


def op_failed(message: str, **where) -> NnapiError:
    return NnapiError(ResultCode.OP_FAILED, message, **where)
