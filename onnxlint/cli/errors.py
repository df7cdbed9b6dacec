"""The command line's exit codes and its usage error, shared by `main` and the commands."""

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """A usage problem, reported as one line and exit code 2."""
