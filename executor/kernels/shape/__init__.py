"""Shape and data-movement operations: reshape, transpose, concatenation, slicing, padding, gather
and the like (reference.py); space/batch and depth rearrangements (space.py); compiled TRANSPOSE
and GATHER (prepared.py)."""
from . import prepared, reference, space  # noqa: F401  (registration)
