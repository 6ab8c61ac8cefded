"""The `agentlaunch` entry point: start the provider CLI early when a known plan allows, then run the CLI."""

from __future__ import annotations

import sys


def main() -> None:
    from agentlaunch import prespawn

    prespawn.start(sys.argv[1:])  # stdlib and PTY only: before the heavier imports below
    from agentlaunch.cli import main as cli_main

    cli_main()
