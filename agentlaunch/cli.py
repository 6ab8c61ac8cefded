"""The `agentlaunch` command: parse options, call the core, map errors to exit codes."""

from __future__ import annotations

import json
import shutil
import sys
import termios
from datetime import date
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from agentlaunch import __version__, paths
from agentlaunch.deliver import deliver
from agentlaunch.errors import AgentlaunchError, DefinitionError, ExitCode, Interrupted, TurnFailed, TurnTimeout
from agentlaunch.events import PermissionRequest
from agentlaunch.meter import Meter
from agentlaunch.providers.claude import summarize
from agentlaunch.render import Rendered, render_instructions
from agentlaunch.session import Launch, LaunchOptions, Terminated, signals_handled, turn_failed
from agentlaunch.spec import PROVIDERS, agent_names, load_agent, resolve_working_dir
from agentlaunch.store import Store
from agentlaunch.transport import window_size
from agentlaunch.view import HeadlessView, InteractiveView

err = Console(stderr=True, highlight=False)
out = Console(highlight=False)

app = typer.Typer(
    name="agentlaunch",
    help=(
        "Launch AI coding agents (Claude Code, Codex CLI, Gemini CLI) from one agent definition, "
        "with cache-friendly instructions and live token and cost counters.\n\n"
        'Example: agentlaunch run demo "hello"'
    ),
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def fail(exc: AgentlaunchError) -> NoReturn:
    """Print a user-facing error and exit with its code."""
    for line in exc.message.splitlines():
        err.print(f"[bold red]error:[/] {line}", markup=True, soft_wrap=True)
    if exc.hint:
        err.print(f"[dim]hint:[/] {exc.hint}", markup=True, soft_wrap=True)
    raise typer.Exit(int(exc.exit_code))


def complete_agent(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of agent names."""
    try:
        explicit = ctx.params.get("agents_dir")
        return [n for n in agent_names(paths.agents_dir(explicit)) if n.startswith(incomplete)]
    except AgentlaunchError:
        return []


AgentsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--agents-dir",
        envvar="AGENTLAUNCH_AGENTS_DIR",
        help="The agents directory (default: ./agents, else the XDG config dir).",
        show_default=False,
    ),
]
AgentArg = Annotated[str, typer.Argument(help="The agent's folder name.", autocompletion=complete_agent)]
TemplatesOpt = Annotated[
    Path | None,
    typer.Option(
        "--templates-dir",
        envvar="AGENTLAUNCH_TEMPLATES_DIR",
        help="Your own templates (instructions.md.j2, startup.md.j2), before the defaults.",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


def _version(value: bool) -> None:
    if value:
        print(f"agentlaunch {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Launch AI coding agents from one definition."""


def report_volatile(rendered: Rendered) -> None:
    for use in rendered.volatile:
        err.print(
            f"[yellow]warning:[/] {use.source}: uses {{{{{use.variable}}}}}, which changes per "
            f"{'day' if use.variable == 'DATE' else 'directory'}: the cacheable prefix ends at byte "
            f"{rendered.first_volatile_offset:,} of {rendered.size:,}; every change costs a new cache write",
            markup=True,
            soft_wrap=True,
        )


@app.command("list")
def list_agents(agents_dir: AgentsDirOpt = None, as_json: JsonOpt = False) -> None:
    """List the agents found, with provider, model, bundles and skills.

    Example: agentlaunch list --json
    """
    try:
        root_dir = paths.agents_dir(agents_dir)
        rows: list[dict[str, Any]] = []
        for name in agent_names(root_dir):
            try:
                spec = load_agent(root_dir, name)
                rows.append(
                    {
                        "name": name,
                        "display": spec.display,
                        "provider": spec.provider,
                        "model": spec.model,
                        "bundles": [b.name for b in spec.bundles],
                        "skills": [s.name for s in spec.skills],
                        "problems": [],
                    }
                )
            except DefinitionError as exc:
                rows.append(
                    {
                        "name": name,
                        "display": None,
                        "provider": None,
                        "model": None,
                        "bundles": [],
                        "skills": [],
                        "problems": exc.problems,
                    }
                )
    except AgentlaunchError as exc:
        fail(exc)
    if as_json:
        print(json.dumps({"agents_dir": str(root_dir), "agents": rows}, indent=2))
        return
    if not rows:
        err.print(f"no agents in {root_dir} (create the examples with `agentlaunch init`)")
        return
    table = Table("agent", "provider", "model", "bundles", "skills", title=str(root_dir), title_justify="left")
    for row in rows:
        if row["problems"]:
            table.add_row(row["name"], "[red]invalid[/]", "", "", f"run `agentlaunch validate {row['name']}`")
        else:
            table.add_row(
                row["name"], row["provider"], row["model"] or "(default)", ", ".join(row["bundles"]), ", ".join(row["skills"])
            )
    out.print(table)


@app.command()
def validate(
    agents: Annotated[
        list[str] | None, typer.Argument(help="Agents to check (default: all).", autocompletion=complete_agent)
    ] = None,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
) -> None:
    """Check agent definitions; print one `FILE: FIELD: message` line per problem.

    Exit 0 when every definition is valid, 3 otherwise.

    Example: agentlaunch validate reviewer planner
    """
    try:
        root_dir = paths.agents_dir(agents_dir)
        names = agents or agent_names(root_dir)
    except AgentlaunchError as exc:
        fail(exc)
    problems: list[str] = []
    for name in names:
        try:
            spec = load_agent(root_dir, name)
            rendered = render_instructions(spec, Path.cwd(), date.today(), templates_dir=templates_dir)
            report_volatile(rendered)
        except DefinitionError as exc:
            problems.extend(exc.problems)
    for line in problems:
        print(line)
    if problems:
        raise typer.Exit(int(ExitCode.DEFINITION))
    err.print(f"{len(names)} agent(s) valid in {root_dir}")


@app.command()
def render(
    agent: AgentArg,
    provider: Annotated[
        str | None,
        typer.Option("--provider", help="Render for this provider instead of the agent's (claude, codex, gemini, fake)."),
    ] = None,
    working_dir: Annotated[
        Path | None, typer.Option("--working-dir", help="Where to write the file (default: the agent's working_dir, else here).")
    ] = None,
    stdout: Annotated[bool, typer.Option("--stdout", help="Print the instructions instead of writing the file.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Back up a file that is not agentlaunch's, then write.")] = False,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
) -> None:
    """Render the agent's instructions file (CLAUDE.md, AGENTS.md or GEMINI.md) into its working directory.

    Reports the size in bytes and estimated tokens, and any variable that
    changes per launch (it moves the prompt-cache boundary).

    Example: agentlaunch render reviewer --provider codex --stdout
    """
    try:
        if provider is not None and provider not in PROVIDERS:
            raise DefinitionError(f"--provider: unknown provider {provider!r} (choose from {', '.join(PROVIDERS)})")
        spec = load_agent(paths.agents_dir(agents_dir), agent)
        wd = resolve_working_dir(spec, working_dir, paths.state_dir())
        rendered = render_instructions(spec, wd, date.today(), provider=provider, templates_dir=templates_dir)
        if stdout:
            sys.stdout.write(rendered.text)
        else:
            delivery = deliver(wd / rendered.filename, rendered.text, spec.name, paths.state_dir(), force=force)
            if delivery.backup:
                err.print(f"moved your {rendered.filename} aside to {delivery.backup}")
            if delivery.previous_agent:
                err.print(f"{delivery.path} held agent {delivery.previous_agent!r}'s instructions; now {spec.name!r}'s")
            state = "wrote" if delivery.changed else "unchanged"
            err.print(f"{state} {delivery.path}")
        err.print(f"{rendered.filename}: {rendered.size:,} bytes, ~{rendered.tokens:,} tokens")
        report_volatile(rendered)
    except AgentlaunchError as exc:
        fail(exc)


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Where to create the agents directory.")] = Path("agents"),
) -> None:
    """Create an agents directory with the example agents; never overwrites a file.

    Example: agentlaunch init ~/.config/agentlaunch/agents
    """
    source = paths.package_data("agents")
    created = kept = 0
    try:
        for src in sorted(source.rglob("*")):
            if src.is_dir() or "__pycache__" in src.parts:
                continue
            dest = directory / src.relative_to(source)
            if dest.exists():
                kept += 1
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            created += 1
    except OSError as exc:
        fail(AgentlaunchError(f"{directory}: cannot create the agents directory ({exc.strerror})"))
    err.print(f"{directory}: created {created} file(s), kept {kept} existing file(s) untouched")
    err.print(f"next: agentlaunch list --agents-dir {directory}")


def main() -> None:
    app()


def read_prompt(prompt: str | None, prompt_opt: str | None) -> str | None:
    """The headless prompt from the argument, -p, or stdin (``-``); None means interactive."""
    if prompt is not None and prompt_opt is not None:
        raise UsageError("give the prompt either as an argument or with -p, not both")
    value = prompt if prompt is not None else prompt_opt
    if value is None:
        return None
    if value == "-":
        data = sys.stdin.buffer.read()
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"the prompt on stdin is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
            ) from None
    else:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError(f"the prompt is not valid UTF-8 (at character {exc.start})") from None
    if not value.strip():
        raise UsageError("the prompt is empty")
    return value


class UsageError(AgentlaunchError):
    exit_code = ExitCode.USAGE


def ask_permission(request: PermissionRequest) -> str:
    """Ask the person whether Claude Code may use a tool: once, always (this session) or deny."""
    summary = summarize(request.tool_input)
    while True:
        try:
            answer = input(f"\nAllow {request.tool_name} {summary}? [y] once · [a] always this session · [n] deny: ")
        except (EOFError, KeyboardInterrupt):
            print()
            return "deny"
        choice = answer.strip().lower()[:1]
        if choice in ("y", "a", "n"):
            return {"y": "once", "a": "always", "n": "deny"}[choice]


def interactive_loop(launch: Launch, view: InteractiveView, timeout: float | None) -> int:
    state = "resumed" if launch.resumed else "new"
    err.print(
        f"[bold]{launch.spec.display}[/] · {launch.spec.provider}{' · ' + launch.spec.model if launch.spec.model else ''}"
        f" · {state} session {launch.session_id}",
        markup=True,
        highlight=False,
    )
    err.print("[dim]Enter sends · Ctrl-C interrupts a turn · Ctrl-C at the prompt or Ctrl-D ends the session[/]", markup=True)
    while True:
        try:
            line = input("› ")
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        except UnicodeDecodeError:
            err.print("[yellow]that line was not valid UTF-8; not sent[/]", markup=True)
            continue
        if not line.strip():
            continue
        outcome = launch.run_turn(line, timeout=timeout, ask_permission=ask_permission)
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
            err.print(f"[bold red]turn failed:[/] {outcome.end.error}", markup=True, highlight=False)


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
        str | None, typer.Option("-r", "--resume", help="Resume the session with this id.", show_default=False)
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
    force: Annotated[
        bool, typer.Option("--force", help="Back up an instructions file that is not agentlaunch's, then write ours.")
    ] = False,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
) -> None:
    """Start the agent on its provider CLI: a chat in the terminal, or one headless turn with a PROMPT.

    Headless, stdout carries only the answer (or JSON lines with --json) and a
    one-line footer of tokens and cost goes to stderr. Exit codes: 0 done,
    1 turn failed, 2 bad command line, 3 definition error, 4 refused overwrite,
    124 timeout, 127 provider CLI missing, 130 interrupted.

    Example: agentlaunch run demo "hello"   ·   echo "hi" | agentlaunch run demo - --json
    """
    if continue_last and resume:
        fail(UsageError("use --continue or --resume ID, not both"))
    try:
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
        )
        placeholder = Meter()
        view: HeadlessView = (
            InteractiveView(placeholder) if text is None else HeadlessView(placeholder, json_lines=as_json, quiet=quiet)
        )
        launch = Launch(options, view)
        view.meter = launch.meter
    except AgentlaunchError as exc:
        fail(exc)
    saved = termios.tcgetattr(0) if sys.stdin.isatty() else None
    code = 0
    error: AgentlaunchError | None = None
    try:
        with signals_handled(lambda: launch.child.resize(*window_size()) if launch.child else None):
            launch.start()
            if text is None:
                code = interactive_loop(launch, view, timeout)  # type: ignore[arg-type]
            else:
                outcome = launch.run_turn(text, timeout=timeout)
                error = turn_failed(outcome)
    except AgentlaunchError as exc:
        error = exc
    except KeyboardInterrupt:
        error = Interrupted("interrupted")
    except Terminated as exc:
        code = 128 + exc.signum
    finally:
        status = int(error.exit_code) if error else code
        launch.close(status)
        if saved is not None:
            termios.tcsetattr(0, termios.TCSADRAIN, saved)
    if error is not None:
        if isinstance(error, TurnFailed | TurnTimeout) and not quiet and not as_json:
            pass  # the footer was printed at the turn's end
        fail(error)
    raise typer.Exit(code)


@app.command()
def sessions(
    agent: Annotated[str | None, typer.Argument(help="Only this agent's sessions.", autocompletion=complete_agent)] = None,
    as_json: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 50,
) -> None:
    """List known sessions: agent, provider, id, working dir, started, last used, turns.

    Example: agentlaunch sessions reviewer --json
    """
    try:
        with Store.open(paths.store_path()) as store:
            rows = store.list_sessions(agent, limit=limit)
    except AgentlaunchError as exc:
        fail(exc)
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "agent": r.agent,
                        "provider": r.provider,
                        "session_id": r.session_id,
                        "working_dir": r.working_dir,
                        "model": r.model,
                        "started": r.started.isoformat(),
                        "last_used": r.last_used.isoformat(),
                        "ended": r.ended.isoformat() if r.ended else None,
                        "exit_status": r.exit_status,
                        "turns": r.turns,
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
    table = Table("agent", "provider", "session", "working dir", "started", "last used", "turns")
    for r in rows:
        table.add_row(
            r.agent,
            r.provider,
            r.session_id,
            r.working_dir,
            f"{r.started.astimezone():%Y-%m-%d %H:%M}",
            f"{r.last_used.astimezone():%Y-%m-%d %H:%M}",
            str(r.turns),
        )
    out.print(table)
