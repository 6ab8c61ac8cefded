"""agentlaunch send: hand a prompt to an agent's running session, from a script or another pane."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any

import typer

from agentlaunch.cli.common import AgentArg, AgentsDirOpt, HostOpt, JsonOpt, app, err
from agentlaunch.cli.on_host import send_on
from agentlaunch.cli.user_io import read_prompt
from agentlaunch.errors import PromptNotTaken, UsageError
from agentlaunch.launch.control_client import ControlClient
from agentlaunch.launch.control_request import command_problem, prompt_problem
from agentlaunch.launch.prompt_client import offer_until_taken, turn_over
from agentlaunch.live.running import running_session
from agentlaunch.visible import for_markup, visible

SendPromptArg = Annotated[str, typer.Argument(help="The prompt ('-' reads it from stdin).", show_default=False)]
WaitOpt = Annotated[
    bool, typer.Option("--wait", help="Wait until the turn is over, print its answer on stdout, exit as headless.")
]
SendTimeoutOpt = Annotated[
    float | None, typer.Option("--timeout", help="With --wait: give up after this many seconds (exit 124).", show_default=False)
]
SessionOpt = Annotated[
    str | None,
    typer.Option("--session", help="The session (its id or unique start) when the agent runs more than one.", show_default=False),
]
ReportTakenOpt = Annotated[
    bool, typer.Option("--report-taken", hidden=True, help="Write a line on stderr once the session took the prompt.")
]
SendQuietOpt = Annotated[bool, typer.Option("-q", "--quiet", help="No footer or note on stderr.")]
CommandOpt = Annotated[
    bool,
    typer.Option(
        "--command",
        help="PROMPT is a slash command of the agent's interface (/cost): typed as it is; "
        "with --wait, send returns once its output settles, or with the answer when it opens a turn.",
    ),
]


@app.command()
def send(
    agent: AgentArg,
    prompt: SendPromptArg,
    wait: WaitOpt = False,
    timeout: SendTimeoutOpt = None,
    session: SessionOpt = None,
    quiet: SendQuietOpt = False,
    as_json: JsonOpt = False,
    command: CommandOpt = False,
    agents_dir: AgentsDirOpt = None,
    host: HostOpt = None,
    report_taken: ReportTakenOpt = False,
) -> None:
    """Hand PROMPT to AGENT's running session, as if typed there, and (--wait) print the answer.

    The agent runs in a terminal or a tmux pane (`agentlaunch run AGENT`, `agentlaunch tmux up`):
    its provider CLI's own interface gets PROMPT pasted and Enter, the line chat takes it as the
    next line. The answer is read from the CLI's transcript, never from the screen.

    PROMPT reaches the model as written, or is refused (exit 2, with the reason): a text the
    interface would not take as a message (Claude Code runs a leading ! in its shell and a
    leading / as a slash command; Gemini a leading /) is never typed. Codex gets it padded
    with a space it strips, which keeps its ! and / modes shut. A slash command is typed
    only with --command.

    A session that is asking (a permission or a question waits for a person) or in a turn
    does not take it: exit 7, and nothing is typed. Exit 7 always means it never will be: a
    session that does not answer within 4 s is told send gives up, before it can type it. One still starting (a new session's
    startup message is its first turn) is waited for, up to 60 s or --timeout. Without --wait, send returns
    once the prompt is typed. With --wait it returns when the agent is waiting again: the answer
    on stdout, a footer of the turn's tokens and cost on stderr, and the exit code of a headless
    turn (0 done, 1 the turn failed, the CLI ended first, or no turn began within 20 s of typing,
    6 a budget stopped it, 130 the person interrupted it, 124 --timeout passed: the turn goes on
    in the agent).

    Exit codes: 0, 1, 2 bad command line (an empty prompt, one with control characters, one the
    interface would not take as a message, two sessions and no --session), 3 no agent of that name
    (the agents are listed, as `run` does), 6, 7 not running or cannot take a prompt now (nothing
    typed), 124, 130; with --host NAME (AGENT on that host of config.yaml, over ssh) 11, 12, 13 (docs/hosts.md).

    Example: agentlaunch send reviewer "Review the last commit" --wait
    ·   git diff | agentlaunch send reviewer - --wait --timeout 600 --json | jq -r .answer
    """
    text = _checked_text(prompt, wait, timeout, command)
    if host is not None:
        raise typer.Exit(send_on(host, agent, text, (wait, timeout, session), (quiet, as_json, command)))
    started = time.monotonic()
    say = None if quiet or as_json else _say
    client, first = offer_until_taken(agent, session, (text, command), wait, timeout, say=say, agents_dir=agents_dir)
    if report_taken:  # for the agentlaunch that ran this one over ssh (--host): the prompt is typed now
        print(f"@@agentlaunch-taken {first.get('session_id') or ''}", file=sys.stderr, flush=True)
    try:
        left = None if timeout is None else max(timeout - (time.monotonic() - started), 0.001)
        _answered(client, first, agent, wait, left, timeout, quiet, as_json)
    finally:
        client.close()


def _checked_text(prompt: str, wait: bool, timeout: float | None, command: bool) -> str:
    """The prompt (``-``: stdin), refused here (exit 2) when it, or ``--timeout``, cannot be sent."""
    if timeout is not None and (timeout <= 0 or timeout != timeout):
        raise UsageError("--timeout must be a positive number of seconds")
    if timeout is not None and not wait:
        raise UsageError("--timeout needs --wait")
    text = read_prompt(prompt, None)
    assert text is not None
    if (problem := prompt_problem(text) or (command_problem(text) if command else None)) is not None:
        raise UsageError(problem)
    return text


def _answered(
    client: ControlClient,
    first: dict[str, Any],
    agent: str,
    wait: bool,
    left: float | None,
    timeout: float | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """After the session took the prompt: nothing more (no --wait), or its answer and exit code."""
    session_id = str(first.get("session_id", ""))
    if not wait:
        if as_json:
            _print_json({"agent": agent, "session_id": session_id, "sent": True})
        elif not quiet:
            err.print(f"[dim]sent to {for_markup(agent)} (session {for_markup(session_id)})[/]", markup=True)
        return
    done = turn_over(client, agent, left, timeout)
    _print_answer(agent, session_id, done, quiet, as_json)
    code = done.get("exit_code")
    if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code <= 255:
        code = 1
    if code and not as_json and done.get("error"):
        err.print(f"[bold red]error:[/] {for_markup(visible(str(done['error'])))}", markup=True, soft_wrap=True)
    raise typer.Exit(code)


@app.command("resume-budget")
def resume_budget(agent: AgentArg, session: SessionOpt = None, as_json: JsonOpt = False, host: HostOpt = None) -> None:
    """Let AGENT go on after a budget paused it (budget.on_spent: pause in agent.yaml or config.yaml).

    The paused session resumes at once. When its limit is no longer spent (raised in agent.yaml or
    config.yaml: the session also resumes by itself within a second of that edit), it simply goes on.
    When the limit is still spent, this is the person's confirmation: the agent may make the calls of
    one more turn over the limit, and pauses again after that turn unless the limit is raised.
    A headless run that was paused goes on with its interrupted task in the same session.

    Exit codes: 0 resumed, 2 a bad agent name, or it runs several sessions and --session names none, 3 no agent of that
    name (listed as `run` does), 7 it is not running, or not paused by a budget (nothing resumed); with --host NAME
    (on that host of config.yaml, over ssh) also 11, 12 and 13.

    Example: agentlaunch resume-budget reviewer
    """
    from agentlaunch.definitions.spec import check_name

    if host is not None:
        from agentlaunch.cli.on_host import flag, run_on, value

        given = [*value(session, "--session"), *flag(as_json, "--json")]
        raise typer.Exit(run_on(host, ["resume-budget", agent, *given], what="resume-budget", agents=False, socket=False))

    if (problem := check_name(agent, "agent")) is not None:
        raise UsageError(f"resume-budget: {problem}")
    record = running_session(agent, session)
    control, state = record.data.get("control"), str(record.data.get("state"))
    if state != "paused" or not isinstance(control, str) or not control:
        raise PromptNotTaken(
            f"{agent} is not paused by a budget (it is {state}): nothing to resume",
            hint="agentlaunch status shows each agent's state",
        )
    try:
        client = ControlClient(control)
    except OSError as exc:
        raise PromptNotTaken(f"{agent}'s session does not answer at {control} ({exc.strerror or exc})") from None
    try:
        reply = client.resume_budget()
    except (OSError, TimeoutError) as exc:
        raise PromptNotTaken(f"{agent}'s session did not answer ({exc or 'no answer'}); nothing was resumed") from None
    finally:
        client.close()
    if reply is None or reply.get("ok") is not True:
        said = (reply or {}).get("error") or "the session hung up"
        raise PromptNotTaken(f"{agent} was not resumed: {said}")
    if as_json:
        _print_json({"agent": agent, "session_id": record.data.get("session_id"), "resumed": reply.get("resumed")})
    else:
        err.print(for_markup(visible(str(reply.get("resumed")))), markup=True, highlight=False, soft_wrap=True)


def _say(line: str) -> None:
    err.print(f"[dim]{for_markup(line)}[/]", markup=True)


def _print_answer(agent: str, session_id: str, done: dict[str, Any], quiet: bool, as_json: bool) -> None:
    answer = done.get("answer") if isinstance(done.get("answer"), str) else ""
    if as_json:
        _print_json(
            {
                "agent": agent,
                "session_id": session_id,
                "exit_code": done.get("exit_code"),
                "answer": answer,
                "error": done.get("error"),
                "usage": done.get("usage"),
                "cost_usd": done.get("cost_usd"),
            }
        )
        return
    shown = visible(str(answer), keep_newlines=True)
    sys.stdout.write(shown if shown.endswith("\n") or not shown else shown + "\n")
    sys.stdout.flush()
    if not quiet:
        err.print(f"[dim]{for_markup(_footer(done))}[/]", markup=True)


def _footer(done: dict[str, Any]) -> str:
    from agentlaunch.datarecord import fields
    from agentlaunch.live.view import usage_footer
    from agentlaunch.token_usage import Usage
    from agentlaunch.usage.pricing import format_cost

    raw, names = done.get("usage"), {f.name for f in fields(Usage)}
    counts = {k: v for k, v in raw.items() if k in names and type(v) is int} if isinstance(raw, dict) else {}
    cost = done.get("cost_usd")
    priced = isinstance(cost, int | float) and not isinstance(cost, bool)
    return usage_footer(Usage(**counts), format_cost(float(cost)) if priced and cost is not None else None)


def _print_json(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()
