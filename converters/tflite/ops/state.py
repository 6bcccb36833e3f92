"""TFLite resource-variable builtins. converters/tflite/variables.py rewrites them into state
inputs and outputs before conversion, and they then emit nothing; these converters only
report why a variable could not be rewritten (inside IF/WHILE bodies, never initialised,
assigned a constant, ...)."""
from __future__ import annotations

from ...registry import Reason, Unsupported, converter
from ..variables import PROBLEM


@converter("tflite", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE", versions=(1, 1))
def resource_variable(node, ctx):
    """Resource variables become model input/output pairs carried between executions (state)."""
    raise Unsupported(Reason.UNSUPPORTED_OPERATOR, node.attrs.get(PROBLEM) or
                      f"{node.op} outside the converted subgraph (in an IF/WHILE body): NNAPI has no variables, "
                      f"and only the converted subgraph's become state inputs and outputs")
