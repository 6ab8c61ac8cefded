"""Running agents: run (chat or one headless turn) and sessions."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentlaunch import paths
from agentlaunch.cli.common import AgentArg, AgentsDirOpt, JsonOpt, TemplatesOpt, app, complete_agent, err, out
from agentlaunch.cli.user_io import read_prompt
from agentlaunch.datarecord import replace
from agentlaunch.errors import UsageError
from agentlaunch.launch.build import build_launch
from agentlaunch.launch.modes import RunRequest, choose_mode, run_mode
from agentlaunch.launch.options import run_options
from agentlaunch.usage.store import Store
from agentlaunch.visible import for_markup

if TYPE_CHECKING:
    from rich.table import Table

    from agentlaunch.usage.records import SessionRow

PromptArg = Annotated[
    str | None, typer.Argument(help="Run one turn headless with this prompt ('-' reads it from stdin).", show_default=False)
]
PromptOpt = Annotated[str | None, typer.Option("-p", "--prompt", help="The prompt, as an option.", show_default=False)]
ContinueOpt = Annotated[
    bool, typer.Option("-c", "--continue", help="Resume this agent's most recent session in this working directory.")
]
ResumeOpt = Annotated[
    str | None, typer.Option("-r", "--resume", help="Resume the session with this id (or its unique start).", show_default=False)
]
ForkOpt = Annotated[
    str | None,
    typer.Option(
        "--fork",
        help="Start a new session from this session's conversation (its id or unique start), in the "
        "CLI's own interface (Claude Code, Codex; Gemini cannot).",
        show_default=False,
    ),
]
HeadlessJsonOpt = Annotated[bool, typer.Option("--json", help="Print normalized events as JSON lines on stdout (headless).")]
QuietOpt = Annotated[bool, typer.Option("-q", "--quiet", help="No footer on stderr.")]
TimeoutOpt = Annotated[
    float | None,
    typer.Option("--timeout", help="End a turn that takes longer than this many seconds (exit 124).", show_default=False),
]
WorkingDirOpt = Annotated[
    Path | None, typer.Option("--working-dir", help="Run there instead of the agent's working_dir.", show_default=False)
]
LineOpt = Annotated[
    bool,
    typer.Option(
        "--line",
        help="Chat through agentlaunch's own line prompt instead of the provider CLI's interface "
        "(what a dumb terminal and the fake provider get).",
    ),
]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Back up an instructions file that is not agentlaunch's, then write ours.")
]
WorktreeOpt = Annotated[
    bool, typer.Option("--worktree", help="Run in the agent's own git worktree (branch agentlaunch/AGENT), made on first use.")
]
AskFdOpt = Annotated[
    int | None,
    typer.Option(
        "--ask-fd",
        hidden=True,
        help="Headless: ask the permission questions on this open descriptor, one answer line each (y, a, n), "
        "instead of denying them (what `agentlaunch acp` hands its turns).",
    ),
]
ProviderFlagOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--provider-flag",
        hidden=True,
        help="One more flag for the provider CLI, after agent.yaml's provider_flags, for this launch only "
        "(repeatable; what `agentlaunch acp` passes the editor's MCP servers with).",
    ),
]
BudgetOpt = Annotated[
    float | None,
    typer.Option(
        "--budget-usd", help="The session's budget in US dollars for this launch (over agent.yaml's).", show_default=False
    ),
]


@app.command()
def run(
    agent: AgentArg,
    prompt: PromptArg = None,
    prompt_opt: PromptOpt = None,
    continue_last: ContinueOpt = False,
    resume: ResumeOpt = None,
    as_json: HeadlessJsonOpt = False,
    quiet: QuietOpt = False,
    timeout: TimeoutOpt = None,
    working_dir: WorkingDirOpt = None,
    line: LineOpt = False,
    force: ForceOpt = False,
    worktree: WorktreeOpt = False,
    budget_usd: BudgetOpt = None,
    fork: ForkOpt = None,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
    ask_fd: AskFdOpt = None,
    provider_flag: ProviderFlagOpt = None,
) -> None:
    """Start the agent on its provider CLI: its own interface in the terminal, or one headless turn with a PROMPT.

    At a terminal, without a PROMPT, the provider CLI's own interactive
    interface (claude, codex, gemini) runs in this terminal, every key passed
    to it; agentlaunch delivers the instructions, sends the startup message as
    the first prompt of a new session, and keeps the meters (see `agentlaunch
    status`, the window title, tmux). --line gives agentlaunch's line chat
    instead (also what TERM=dumb and the fake provider get). -c / -r ID resume
    a session either way; --fork ID starts a new one from that session's
    conversation (`agentlaunch fork AGENT` does it in a tmux window).

    Headless, stdout carries only the answer (or JSON lines with --json) and a
    one-line footer of tokens and cost goes to stderr. Exit codes: 0 done,
    1 turn failed, 2 bad command line, 3 definition error, 4 refused overwrite,
    5 state unusable, 6 a budget stopped the agent, 124 timeout, 127 provider CLI missing, 130 interrupted,
    129 / 143 SIGHUP / SIGTERM.

    Example: agentlaunch run reviewer   ·   agentlaunch run reviewer -c   ·   agentlaunch run demo "hello"
    ·   echo "hi" | agentlaunch run demo - --json
    """
    one_session(continue_last, resume, fork)
    request = read_request(prompt, prompt_opt, line=line, as_json=as_json, quiet=quiet, timeout=timeout)
    if ask_fd is not None:
        request = ask_on(request, ask_fd)
    options = run_options(
        agent,
        agents_dir,
        templates_dir=templates_dir,
        working_dir=working_dir,
        resume=resume,
        continue_last=continue_last,
        fork=fork,
        force=force,
        worktree=worktree,
        budget_usd=budget_usd,
        extra_flags=tuple(provider_flag or ()),
    )
    mode = choose_mode(options, request)
    raise typer.Exit(run_mode(mode, build_launch(mode.options, mode.views)))


def ask_on(request: RunRequest, fd: int) -> RunRequest:
    """``request`` with its permission questions asked on ``fd`` (``--ask-fd``: a headless turn only)."""
    import os

    if request.text is None:
        raise UsageError("--ask-fd needs a prompt (headless mode)")
    try:
        os.fstat(fd)
    except (OSError, OverflowError):
        raise UsageError(f"--ask-fd {fd}: no such open file descriptor") from None
    return replace(request, ask_fd=fd)


def one_session(continue_last: bool, resume: str | None, fork: str | None) -> None:
    """At most one of --continue, --resume ID and --fork ID: a usage error (exit 2) otherwise."""
    if continue_last and resume:
        raise UsageError("use --continue or --resume ID, not both")
    if fork and (continue_last or resume):
        raise UsageError("--fork starts a new session: not with --resume or --continue")


def read_request(
    prompt: str | None, prompt_opt: str | None, *, line: bool, as_json: bool, quiet: bool, timeout: float | None
) -> RunRequest:
    """What `run` asks beyond the launch's options: the prompt read (stdin with '-'), else a chat, which needs a
    terminal (and no --json)."""
    text = read_prompt(prompt, prompt_opt)
    if text is None and as_json:
        raise UsageError("--json needs a prompt (headless mode)")
    if text is None and not sys.stdin.isatty():
        raise UsageError("no prompt: pass PROMPT, -p PROMPT, or - to read it from stdin (the chat needs a terminal)")
    return RunRequest(text, line=line, as_json=as_json, quiet=quiet, timeout=timeout)


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
    with Store.open(paths.store_path()) as store:
        rows = store.list_sessions(agent, limit=limit)
        costs = store.session_costs([r.session_id for r in rows])
        for line in store.skipped():  # a malformed row is left out, named once (never in the JSON)
            err.print(f"[yellow]warning:[/] {for_markup(line)}", markup=True, soft_wrap=True)
    if as_json:
        print(json.dumps([session_json(r, *costs.get(r.session_id, (None, 0))) for r in rows], indent=2))
    elif not rows:
        err.print("no sessions yet: start one with `agentlaunch run AGENT`")
    else:
        out.print(sessions_table(rows, costs))


def session_json(r: SessionRow, cost: float | None, calls: int) -> dict[str, object]:
    """One session of `sessions --json`."""
    return {
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
        "calls": calls,
        "cost_usd": cost,  # null: no call could be priced
        "tmux_session": r.tmux_session,
        "tmux_window": r.tmux_window,
        "tmux_layout": r.tmux_layout,
    }


def sessions_table(rows: list[SessionRow], costs: dict[str, tuple[float | None, int]]) -> Table:
    """The sessions as the terminal shows them."""
    from rich.table import Table  # only here: `run` starts faster without it

    from agentlaunch.usage.pricing import format_cost

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
    return table
