"""The `agentlaunch` entry point: start the provider CLI early when a known plan allows, run the CLI, exit at once.

Typer reads every command line but two forms, answered before it is imported (importing typer and building the
command cost tens of milliseconds, measured in each fast path's docstring): ``status --line``/``--json``
(:mod:`agentlaunch.live.status_fast`) and ``deck`` in a terminal (:func:`agentlaunch.deck.start.fast_options`).
Each reads only its plain forms and leaves anything else (help, a typo, a usage error) to Typer; tests hold
their readings to click's.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["status"]:
        fast_status(args[1:])
    if args[:1] == ["deck"]:
        fast_deck(args[1:])
    if args[:1] == ["run"]:  # only `run` starts a CLI: no other command imports the early start
        gc.disable()  # until the imports are done: no collection passes over their objects (run_cli)
        from agentlaunch.launch.early import prespawn

        prespawn.start(args)  # stdlib and PTY only: before the heavier imports below
    exit_now(run_cli(args))


def run_cli(args: list[str]) -> int:
    """Run the Typer app on ``args`` (the modules of the command they name imported first); its exit status."""
    from agentlaunch.cli import load_commands

    app = load_commands(args)
    if not gc.isenabled():
        # The launch's modules are loaded: their objects live as long as the process. Frozen, the collections of a
        # long session never walk them again; collected from here on (about 4 ms of CPU a launch, measured).
        gc.freeze()
        gc.enable()
    try:
        app(args, prog_name="agentlaunch")
    except SystemExit as exc:
        return exit_code(exc)
    return 0


def fast_status(args: list[str]) -> None:
    """``status --line``/``--json`` on the standard library only (agentlaunch.live.status_fast); other forms return."""
    from agentlaunch.live.status_fast import answer

    code = answer(args)
    if code is not None:
        exit_now(code)


def fast_deck(args: list[str]) -> None:
    """``deck`` with its options (or none) in a terminal, before Typer is imported; anything else returns to it."""
    from agentlaunch.deck.start import fast_options, run_deck
    from agentlaunch.errors import AgentlaunchError

    options = fast_options(args)
    if options is None:
        return
    try:
        run_deck(*options)
    except AgentlaunchError as exc:
        from agentlaunch.cli.user_io import report

        exit_now(report(exc))
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
