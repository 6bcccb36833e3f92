"""The `nnapi` command's exit codes (documented in the README; other tools rely on them)."""

EXIT_OK, EXIT_MISMATCH, EXIT_UNSUPPORTED, EXIT_INVALID, EXIT_MISSING_DEPENDENCY = 0, 1, 2, 3, 4
