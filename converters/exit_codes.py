"""The `nnapi` command's exit codes (documented in the README; other tools rely on them)."""

EXIT_OK, EXIT_MISMATCH, EXIT_UNSUPPORTED, EXIT_INVALID, EXIT_MISSING_DEPENDENCY, EXIT_INTERNAL = 0, 1, 2, 3, 4, 5

# the one wording of the exit codes, for --help and the module docs
EXIT_CODES_TEXT = ("0 ok, 1 parity mismatch, 2 unsupported operation(s), 3 invalid model or input, "
                   "4 missing optional dependency, 5 internal error (a bug: please report it)")
