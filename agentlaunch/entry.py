"""The `agentlaunch` entry point: start the provider CLI early when a known plan allows, run the CLI, exit at once."""

from __future__ import annotations

import atexit
import gc
import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["status"]:
        lean_status(sys.argv[2:])
    if sys.argv[1:2] == ["deck"]:
        lean_deck(sys.argv[2:])
    if sys.argv[1:2] == ["run"]:  # only `run` starts a CLI: no other command imports the early start
        gc.disable()  # until the imports are done: no collection passes over their objects (lean_run)
        from agentlaunch.launch.early import prespawn

        prespawn.start(sys.argv[1:])  # stdlib and PTY only: before the heavier imports below
        lean_run(sys.argv[1:])
    from agentlaunch.cli import main as cli_main

    try:
        cli_main()
        code = 0
    except SystemExit as exc:
        code = exit_code(exc)
    exit_now(code)


def lean_run(args: list[str]) -> None:
    """``run`` without Typer when the option table describes its command line (agentlaunch.cli.run_lean)."""
    from agentlaunch.cli.run_lean import answer

    # The launch's modules are loaded: their objects live as long as the process. Frozen, the collections of a
    # long session never walk them again; collected from here on (about 4 ms of CPU a launch, measured).
    gc.freeze()
    gc.enable()
    code = answer(args)
    if code is not None:
        exit_now(code)


def lean_status(args: list[str]) -> None:
    """``status --line``/``--json`` on the standard library only (agentlaunch.live.status_lean); other forms return."""
    from agentlaunch.live.status_lean import answer

    code = answer(args)
    if code is not None:
        exit_now(code)


def lean_deck(args: list[str]) -> None:
    """``deck`` with its options (or none) in a terminal, without the full CLI; anything else returns to it."""
    from agentlaunch.deck.start import lean_options, run_deck
    from agentlaunch.errors import AgentlaunchError

    options = lean_options(args)
    if options is None:
        return
    try:
        run_deck(*options)
    except AgentlaunchError as exc:
        print("\n".join([*(f"error: {line}" for line in exc.message.splitlines()), *([f"hint: {exc.hint}"] if exc.hint else [])]),
              file=sys.stderr)  # fmt: skip
        exit_now(int(exc.exit_code))
    exit_now(0)


def exit_code(exc: SystemExit) -> int:
    """The status ``sys.exit`` would give: None is 0, a message is printed and gives 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def exit_now(code: int) -> None:
    """End the process without tearing the interpreter down.

    Every command has closed what it opened (store, child, files) by now. The
    teardown of a process that loaded pydantic and genai-prices takes a tenth
    of a second or more, which a launch would add to every headless turn. The
    exit functions (atexit, weakref finalizers) still run, and the standard
    streams are flushed.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`agentlaunch ... | head`) or a closed stream
            code = code or 1
    os._exit(code)
