"""The `snowfire` command line: one console script, one subcommand per job."""

from .main import main

__all__ = ["main"]
