"""Running agents: run (chat or one headless turn) and sessions."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import termios
from pathlib import Path
from typing import Annotated

import typer

from agentlaunch import paths
from agentlaunch.cli.common import (
    AgentArg,
    AgentsDirOpt,
    JsonOpt,
    TemplatesOpt,
    app,
    complete_agent,
    err,
    out,
    read_prompt,
)
from agentlaunch.errors import AgentlaunchError, ExitCode, Interrupted, UsageError
from agentlaunch.events import PermissionRequest
from agentlaunch.launch import prespawn
from agentlaunch.launch.answer import Figures, TurnAnswer
from agentlaunch.launch.build import build_launch
from agentlaunch.launch.chat_door import ChatDoor
from agentlaunch.launch.control import SendRequest, launch_busy
from agentlaunch.launch.native import NativeRun
from agentlaunch.launch.session import Launch, LaunchOptions
from agentlaunch.launch.signals import CliExited, PromptArrived, Terminated
from agentlaunch.launch.turn import TurnOutcome, turn_failed
from agentlaunch.live.interface_view import InterfaceView
from agentlaunch.live.view import HeadlessView, InteractiveView
from agentlaunch.providers.values import summarize
from agentlaunch.sinks import Sink
from agentlaunch.usage.budget import check_budget_usd
from agentlaunch.usage.meter import Meter
from agentlaunch.usage.store import Store
from agentlaunch.visible import for_markup, visible


def ask_permission(request: PermissionRequest) -> str:
    """Ask the person whether Claude Code may use a tool: once, always (this session) or deny."""
    summary = visible(summarize(request.tool_input))
    while True:
        try:
            answer = input(f"\nAllow {visible(request.tool_name)} {summary}? [y] once · [a] always this session · [n] deny: ")
        except (EOFError, KeyboardInterrupt):
            print()
            return "deny"
        choice = answer.strip().lower()[:1]
        if choice in ("y", "a", "n"):
            return {"y": "once", "a": "always", "n": "deny"}[choice]


def report_cli_exit(launch: Launch) -> int:
    """Say that the CLI ended at the prompt, with the last lines it printed, and end the chat (exit 1)."""
    assert launch.child is not None
    said = [line.strip() for line in launch.child.read_available() if isinstance(line, str) and line.strip()]
    print()
    err.print(
        f"[bold red]error:[/] the provider CLI exited (code {launch.child.poll()}) while waiting for you; the session ended",
        markup=True,
        highlight=False,
        soft_wrap=True,
    )
    for line in said[-5:]:
        err.print(f"  {for_markup(visible(line))}", markup=True, highlight=False, soft_wrap=True)
    return int(ExitCode.TURN_FAILED)


def interactive_loop(launch: Launch, timeout: float | None) -> int:
    state = "resumed" if launch.resumed else "new"
    err.print(
        f"[bold]{launch.spec.display}[/] · {launch.spec.provider}{' · ' + launch.spec.model if launch.spec.model else ''}"
        f" · {state} session {launch.session_id}",
        markup=True,
        highlight=False,
    )
    err.print("[dim]Enter sends · Ctrl-C interrupts a turn · Ctrl-C at the prompt or Ctrl-D ends the session[/]", markup=True)
    watch = launch.persistent and launch.child is not None and launch.child.pid > 0
    if watch:
        assert launch.child is not None
        launch.signals.watch_cli(launch.child.pid)  # a long-lived CLI that exits at the prompt ends the chat
    with ChatDoor(launch) as door:
        while True:
            for request in door.take():
                if (code := sent_turn(launch, request, timeout, door.answer)) is not None:
                    return code
            try:
                # SIGTERM/SIGHUP here raise Terminated; Ctrl-C ends the chat; the CLI's exit raises CliExited.
                with launch.signals.person_waiting(watch_cli=watch, takes_sends=door.open):
                    line = input("› ")
            except (EOFError, KeyboardInterrupt):
                print()
                return 0
            except CliExited:
                return report_cli_exit(launch)
            except PromptArrived:
                print()
                continue  # a prompt from agentlaunch send: taken at the top (what the person typed stays typed)
            except UnicodeDecodeError:
                err.print("[yellow]that line was not valid UTF-8; not sent[/]", markup=True)
                continue
            if not line.strip():
                continue
            outcome = launch.run_turn(line, timeout=timeout, ask_permission=ask_permission)
            if (code := after_turn(launch, outcome)) is not None:
                return code


def after_turn(launch: Launch, outcome: TurnOutcome) -> int | None:
    """What the chat says after a turn; the chat's exit code when the turn ended the session, else None."""
    if launch.stopped is not None:
        raise launch.stopped  # a budget ended the session
    if outcome.terminated is not None:
        return 128 + outcome.terminated
    if outcome.end is None and not launch.persistent:
        # One process per turn: its end is the turn's, not the session's.
        if outcome.interrupted:
            err.print("[dim](turn interrupted; the session goes on)[/]", markup=True)
        else:
            failure = turn_failed(outcome)
            said = for_markup(failure.message) if failure else ""
            err.print(f"[bold red]turn failed:[/] {said}", markup=True, highlight=False)
        return None
    if outcome.end is None and not outcome.interrupted:
        err.print(
            f"[bold red]error:[/] the provider CLI exited (code {outcome.exit_code}); the session ended. "
            f"Resume it with: agentlaunch run {launch.spec.name} -r {launch.session_id}",
            markup=True,
        )
        return int(ExitCode.TURN_FAILED)
    if outcome.end is None:
        return int(ExitCode.INTERRUPTED)
    if outcome.interrupted:
        err.print("[dim](turn interrupted; the session goes on)[/]", markup=True)
    elif outcome.end.is_error:
        err.print(f"[bold red]turn failed:[/] {for_markup(outcome.end.error or '')}", markup=True, highlight=False)
    return None


def sent_turn(launch: Launch, request: SendRequest, timeout: float | None, answer: TurnAnswer) -> int | None:
    """A prompt from agentlaunch send, as one turn of the chat; its answer and exit code go back with --wait."""
    if why := launch_busy(launch):
        request.refuse(why, launch.state)
        return None
    err.print(f"› {for_markup(visible(request.prompt))} [dim](from agentlaunch send)[/]", markup=True, highlight=False)
    request.accept(launch.session_id)
    before = Figures.of(launch.meter)
    try:
        outcome = launch.run_turn(request.prompt, timeout=timeout, ask_permission=ask_permission)
    except AgentlaunchError as exc:  # the turn timed out, or the session was stopped
        usage, cost = before.since(launch.meter)
        request.answer(exit_code=int(exc.exit_code), answer=answer.text, error=exc.message, usage=usage, cost_usd=cost)
        raise
    usage, cost = before.since(launch.meter)
    failure = launch.stopped or turn_failed(outcome)
    code = 128 + outcome.terminated if outcome.terminated is not None else (int(failure.exit_code) if failure else 0)
    error = failure.message if failure else None
    request.answer(exit_code=code, answer=answer.text, error=error, usage=usage, cost_usd=cost)
    return after_turn(launch, outcome)


def line_chat_reason(launch: Launch) -> str | None:
    """Why this terminal or provider gets the line chat rather than the CLI's own interface; None: it gets that."""
    provider = launch.spec.provider
    if not launch.adapter.has_interface:
        return f"the {provider} provider has no interface of its own"
    term = os.environ.get("TERM", "")
    if term in ("", "dumb"):
        return f"TERM is {term or 'not set'}, which cannot draw {provider}'s interface"
    if not sys.stdout.isatty():
        return f"stdout is not a terminal, so {provider}'s interface cannot be shown"
    return None


def announce(launch: Launch) -> None:
    """One line before the CLI's interface takes the terminal: which agent, which session."""
    state = "resumed" if launch.resumed else "new"
    session = f"session {launch.session_id}" if launch.adapter.chooses_session_id or launch.resumed else "session"
    err.print(
        f"[dim]{for_markup(launch.spec.display)} · {launch.spec.provider} · {state} {for_markup(session)} · "
        f"agentlaunch status shows its meters[/]",
        markup=True,
        highlight=False,
    )
    for notice in launch.adapter.interface_notices(launch.placement_argv):
        err.print(f"[dim]{for_markup(notice)}[/]", markup=True, highlight=False)


@app.command()
def run(
    agent: AgentArg,
    prompt: Annotated[
        str | None, typer.Argument(help="Run one turn headless with this prompt ('-' reads it from stdin).", show_default=False)
    ] = None,
    prompt_opt: Annotated[
        str | None, typer.Option("-p", "--prompt", help="The prompt, as an option.", show_default=False)
    ] = None,
    continue_last: Annotated[
        bool, typer.Option("-c", "--continue", help="Resume this agent's most recent session in this working directory.")
    ] = False,
    resume: Annotated[
        str | None,
        typer.Option("-r", "--resume", help="Resume the session with this id (or its unique start).", show_default=False),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print normalized events as JSON lines on stdout (headless).")] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No footer on stderr.")] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="End a turn that takes longer than this many seconds (exit 124).", show_default=False),
    ] = None,
    working_dir: Annotated[
        Path | None, typer.Option("--working-dir", help="Run there instead of the agent's working_dir.", show_default=False)
    ] = None,
    line: Annotated[
        bool,
        typer.Option(
            "--line",
            help="Chat through agentlaunch's own line prompt instead of the provider CLI's interface "
            "(what a dumb terminal and the fake provider get).",
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Back up an instructions file that is not agentlaunch's, then write ours.")
    ] = False,
    worktree: Annotated[
        bool,
        typer.Option("--worktree", help="Run in the agent's own git worktree (branch agentlaunch/AGENT), made on first use."),
    ] = False,
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd", help="The session's budget in US dollars for this launch (over agent.yaml's).", show_default=False
        ),
    ] = None,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
) -> None:
    """Start the agent on its provider CLI: its own interface in the terminal, or one headless turn with a PROMPT.

    At a terminal, without a PROMPT, the provider CLI's own interactive
    interface (claude, codex, gemini) runs in this terminal, every key passed
    to it; agentlaunch delivers the instructions, sends the startup message as
    the first prompt of a new session, and keeps the meters (see `agentlaunch
    status`, the window title, tmux). --line gives agentlaunch's line chat
    instead (also what TERM=dumb and the fake provider get). -c / -r ID resume
    a session either way.

    Headless, stdout carries only the answer (or JSON lines with --json) and a
    one-line footer of tokens and cost goes to stderr. Exit codes: 0 done,
    1 turn failed, 2 bad command line, 3 definition error, 4 refused overwrite,
    5 state unusable, 6 a budget stopped the agent, 124 timeout, 127 provider CLI missing, 130 interrupted,
    129 / 143 SIGHUP / SIGTERM.

    Example: agentlaunch run reviewer   ·   agentlaunch run reviewer -c   ·   agentlaunch run demo "hello"
    ·   echo "hi" | agentlaunch run demo - --json
    """
    if continue_last and resume:
        raise UsageError("use --continue or --resume ID, not both")
    text = read_prompt(prompt, prompt_opt)
    if text is None and as_json:
        raise UsageError("--json needs a prompt (headless mode)")
    if text is None and not sys.stdin.isatty():
        raise UsageError("no prompt: pass PROMPT, -p PROMPT, or - to read it from stdin (the chat needs a terminal)")
    options = LaunchOptions(
        agent=agent,
        agents_dir=paths.agents_dir(agents_dir),
        templates_dir=templates_dir,
        working_dir=working_dir,
        resume=resume,
        continue_last=continue_last,
        force=force,
        interactive=text is None,
        native=text is None and not line,
        # Not with --worktree: the next launch's early start, keyed without it, must not run in the worktree.
        plan_key=None if worktree else prespawn.plan_key(agent, str(agents_dir) if agents_dir else None,
                                                         str(working_dir) if working_dir else None),
        worktree=worktree,
        budget_usd=None if budget_usd is None else check_budget_usd(budget_usd),
    )  # fmt: skip

    interface_view: InterfaceView | None = None

    def views(meter: Meter) -> list[Sink]:
        nonlocal interface_view
        if options.native:
            interface_view = InterfaceView(meter)
            return [interface_view]
        if text is None:
            return [InteractiveView(meter)]
        return [HeadlessView(meter, json_lines=as_json, quiet=quiet)]

    launch = build_launch(options, views)
    if options.native and (why := line_chat_reason(launch)) is not None:
        # No interface to relay here: the line chat, said in one line.
        options = launch.options = dataclasses.replace(options, native=False)
        launch.sinks = [InteractiveView(launch.meter) if s is interface_view else s for s in launch.sinks]
        err.print(f"[dim]{for_markup(why)}: agentlaunch's line chat instead (--line chooses it)[/]", markup=True)
    saved = termios.tcgetattr(0) if sys.stdin.isatty() else None
    code = 0
    error: AgentlaunchError | None = None
    try:
        launch.start()
        if options.native:
            announce(launch)
            code = NativeRun(launch, interface_view).run()
            error = launch.stopped  # a budget ended the interface
        elif text is None:
            code = interactive_loop(launch, timeout)
        else:
            outcome = launch.run_turn(text, timeout=timeout)
            if outcome.terminated is not None:
                code = 128 + outcome.terminated
            else:
                error = launch.stopped or turn_failed(outcome)
    except AgentlaunchError as exc:
        error = exc
    except KeyboardInterrupt:
        error = Interrupted("interrupted")
    except Terminated as exc:
        code = 128 + exc.signum
    finally:
        if launch.signals.termination is not None and error is None:
            code = 128 + launch.signals.termination  # SIGTERM/SIGHUP while starting: recorded, ended here
        status = int(error.exit_code) if error else code
        launch.close(status)
        if saved is not None:
            termios.tcsetattr(0, termios.TCSADRAIN, saved)
    if error is not None:
        raise error
    raise typer.Exit(code)


@app.command()
def sessions(
    agent: Annotated[str | None, typer.Argument(help="Only this agent's sessions.", autocompletion=complete_agent)] = None,
    as_json: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 50,
) -> None:
    """List known sessions: agent, id, title (its first prompt), turns, cost, last used, working dir.

    Any command that takes a session id (`run -r`, `usage --session`) takes
    a unique start of it too.

    Example: agentlaunch sessions reviewer --json
    """
    from agentlaunch.usage.pricing import format_cost

    with Store.open(paths.store_path()) as store:
        rows = store.list_sessions(agent, limit=limit)
        costs = store.session_costs([r.session_id for r in rows])
        for line in store.skipped():  # a malformed row is left out, named once (never in the JSON)
            err.print(f"[yellow]warning:[/] {for_markup(line)}", markup=True, soft_wrap=True)
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "agent": r.agent,
                        "provider": r.provider,
                        "session_id": r.session_id,
                        "title": r.title,
                        "working_dir": r.working_dir,
                        "model": r.model,
                        "started": r.started.isoformat(),
                        "last_used": r.last_used.isoformat(),
                        "ended": r.ended.isoformat() if r.ended else None,
                        "exit_status": r.exit_status,
                        "turns": r.turns,
                        "calls": costs.get(r.session_id, (None, 0))[1],
                        "cost_usd": costs.get(r.session_id, (None, 0))[0],  # null: no call could be priced
                        "tmux_session": r.tmux_session,
                        "tmux_window": r.tmux_window,
                        "tmux_layout": r.tmux_layout,
                    }
                    for r in rows
                ],
                indent=2,
            )
        )
        return
    if not rows:
        err.print("no sessions yet: start one with `agentlaunch run AGENT`")
        return
    from rich.table import Table  # only here: `run` starts faster without it

    table = Table("agent", "session", "title", "turns", "cost", "last used", "working dir", "provider")
    for r in rows:
        cost, calls = costs.get(r.session_id, (None, 0))
        shown_cost = format_cost(cost) if cost is not None else ("unpriced" if calls else "–")
        table.add_row(
            for_markup(r.agent),
            for_markup(r.session_id),  # the store is input too
            for_markup(r.title or "–"),
            str(r.turns),
            shown_cost,
            f"{r.last_used.astimezone():%Y-%m-%d %H:%M}",
            for_markup(r.working_dir),
            for_markup(r.provider),
        )
    out.print(table)
