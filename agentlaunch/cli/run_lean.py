"""`agentlaunch run` without Typer: the command line read with the option table `run` left, then the launch.

Importing Typer (and the click it vendors) and building `run`'s command from its
signature cost a headless launch about 25-30 ms of CPU before anything was
launched. The entry point (``agentlaunch.entry``) hands a `run` here first:
when the option table the last launch kept (:func:`agentlaunch.launch.early.prespawn.
read_run_options`, written from `run`'s own click definition for this version)
describes the command line plainly (:func:`agentlaunch.launch.early.prespawn.
parse_params`), the options are typed as click types them and :func:`launch`
runs, the one body both paths share; errors are reported and mapped to exit
codes as the Typer app's error boundary does. Anything else (no table yet, help,
an unknown or malformed option, a value click would refuse) returns None and
Typer parses the command line, and says what is wrong with it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentlaunch import paths
from agentlaunch.cli.plain import note_bundled, read_prompt, report
from agentlaunch.errors import AgentlaunchError, UsageError
from agentlaunch.launch.build import build_launch
from agentlaunch.launch.early import prespawn
from agentlaunch.launch.modes import RunRequest, choose_mode, run_mode
from agentlaunch.launch.options import LaunchOptions
from agentlaunch.usage.budget import check_budget_usd

PATHS = ("agents_dir", "working_dir", "templates_dir")
FLOATS = ("timeout", "budget_usd")
ENVVARS = {"agents_dir": "AGENTLAUNCH_AGENTS_DIR", "templates_dir": "AGENTLAUNCH_TEMPLATES_DIR"}  # as `run` declares


def launch(agent: str, prompt: str | None, prompt_opt: str | None = None, **options: Any) -> int:
    """`run`'s launch once its command line is read, on either path; its exit code.

    ``options`` are `run`'s other parameters by name (absent: the default)."""
    continue_last, resume, fork = options.get("continue_last", False), options.get("resume"), options.get("fork")
    if continue_last and resume:
        raise UsageError("use --continue or --resume ID, not both")
    if fork and (continue_last or resume):
        raise UsageError("--fork starts a new session: not with --resume or --continue")
    text = read_prompt(prompt, prompt_opt)
    as_json = options.get("as_json", False)
    if text is None and as_json:
        raise UsageError("--json needs a prompt (headless mode)")
    if text is None and not sys.stdin.isatty():
        raise UsageError("no prompt: pass PROMPT, -p PROMPT, or - to read it from stdin (the chat needs a terminal)")
    agents_dir, working_dir, worktree = options.get("agents_dir"), options.get("working_dir"), options.get("worktree", False)
    budget_usd = options.get("budget_usd")
    launch_options = LaunchOptions(
        agent=agent, agents_dir=paths.agents_dir(agents_dir), templates_dir=options.get("templates_dir"),
        working_dir=working_dir, resume=resume, continue_last=continue_last, fork=fork, force=options.get("force", False),
        worktree=worktree,
        # Not with --worktree: the next launch's early start, keyed without it, must not run in the worktree.
        plan_key=None if worktree else prespawn.plan_key(agent, str(agents_dir) if agents_dir else None,
                                                         str(working_dir) if working_dir else None),
        budget_usd=None if budget_usd is None else check_budget_usd(budget_usd),
    )  # fmt: skip
    request = RunRequest(text, line=options.get("line", False), as_json=as_json, quiet=options.get("quiet", False),
                         timeout=options.get("timeout"))  # fmt: skip
    mode = choose_mode(launch_options, request)
    return run_mode(mode, build_launch(mode.options, mode.views))


def typed(given: Mapping[str, str]) -> dict[str, Any] | None:
    """The options' values as click gives them to `run` (its two variables included); None: let click say why not."""
    values: dict[str, Any] = dict(given)
    for name, variable in ENVVARS.items():
        if name not in values and os.environ.get(variable):  # click ignores a variable set empty
            values[name] = os.environ[variable]
    if any(value == "" for value in values.values()):
        return None  # an empty value: whatever click makes of it, it says so
    try:
        for name in FLOATS:
            if name in values:
                values[name] = float(values[name])
    except ValueError:
        return None
    for name in PATHS:
        if name in values:
            values[name] = Path(values[name])
    return values


def answer(args: Sequence[str]) -> int | None:
    """The exit code of ``agentlaunch ARGS`` run here, or None when Typer must read them (see the module)."""
    parsed = prespawn.parse_params(args, prespawn.read_run_options(paths.state_dir()))
    values = None if parsed is None else typed(parsed[1])
    if parsed is None or values is None:
        return None
    named, _, flags = parsed
    values.update(dict.fromkeys(flags, True))
    try:
        note_bundled(values.get("agents_dir"))
        return launch(named["agent"], named.get("prompt"), **values)
    except AgentlaunchError as exc:
        report(exc)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        return 130  # what Typer gives it
    except EOFError:
        print("\nAborted!", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1  # stdout closed early (`agentlaunch run ... | head`), as Typer ends it
