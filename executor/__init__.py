"""The numpy reference executor behind nnapi.Compilation / nnapi.Execution: importing it registers it
as nnapi's execution backend (nnapi/backend.py)."""
from nnapi import backend as _backend


def _runtime():
    from . import runtime  # loaded at the first compilation: importing a kernel helper stays light
    return runtime


_backend.register(_runtime)
