"""agentlaunch answer: read the question an agent's CLI asks (a permission, a question) and answer it without
attaching to its pane."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from agentlaunch.cli.common import AgentArg, AgentsDirOpt, HostOpt, JsonOpt, app, err
from agentlaunch.cli.send import SessionOpt
from agentlaunch.errors import UsageError
from agentlaunch.launch.answer_client import DECISION_WORDS, give_answer, open_question
from agentlaunch.visible import for_markup, visible

AllowOpt = Annotated[bool, typer.Option("--allow", help="Allow the tool once.")]
AlwaysOpt = Annotated[bool, typer.Option("--always", help="Allow it always, as the CLI's own 'always' does (where it has one).")]
DenyOpt = Annotated[bool, typer.Option("--deny", help="Refuse the tool: it does not run; the model is told.")]
ReplyOpt = Annotated[
    str | None, typer.Option("--reply", help="Answer a question (not a permission) with TEXT.", show_default=False)
]
QuestionOpt = Annotated[
    str | None,
    typer.Option("--question", help="The id of the question answered, as shown (needed with a decision).", show_default=False),
]
KEYS = {"a": "once", "A": "always", "d": "deny", "r": "reply"}
KEY_WORDS = {"once": "allow", "always": "allow always", "deny": "deny", "reply": "reply"}


@app.command()
def answer(
    agent: AgentArg,
    allow: AllowOpt = False,
    always: AlwaysOpt = False,
    deny: DenyOpt = False,
    reply: ReplyOpt = None,
    question: QuestionOpt = None,
    session: SessionOpt = None,
    as_json: JsonOpt = False,
    agents_dir: AgentsDirOpt = None,
    host: HostOpt = None,
) -> None:
    """Show what AGENT's CLI asks (a permission, a question) and answer it without attaching to its pane.

    With no decision it shows the open question: the tool, its input, the options its CLI offers
    and the question's id; on a terminal it then asks for the answer (a allow once, A allow
    always, d deny, r reply, Enter leaves it open). A script answers with one of --allow,
    --always, --deny or --reply TEXT and the --question ID it was shown: an answer names the
    question it answers, and a question closed meanwhile (answered in the pane, say) is never
    answered in its place. The person can still answer in the pane: whichever comes first wins.

    Claude Code and Codex (through agentlaunch's app-server) are answered on their own channel,
    no key typed; their questions (AskUserQuestion, request_user_input) take --reply TEXT (a
    choice: its label). Gemini is answered with keys, only while its tmux pane shows the
    question; its ask_user takes --reply TEXT for one text question. A budget stays in charge:
    a tool it holds is not allowed by an answer.

    Exit codes: 0 shown or answered, 2 bad command line (two decisions, a decision without
    --question, an option the question does not offer), 3 no agent of that name, 6 a budget
    holds the tool (an allow refused), 7 not running or not reachable, 9 the agent asks nothing
    now or its CLI did not take the answer (a reply Gemini's screen did not show submitted), 10
    the question named was answered meanwhile and another is open (nothing answered); with
    --host NAME (on that host of config.yaml, over ssh: never asks here) also 11, 12 and 13.

    Example: agentlaunch answer reviewer
    ·   id=$(agentlaunch answer reviewer --json | jq -r .question.id)
    ·   agentlaunch answer reviewer --deny --question "$id"
    """
    decisions = [d for d, on in (("once", allow), ("always", always), ("deny", deny), ("reply", reply is not None)) if on]
    if len(decisions) > 1:
        raise UsageError("give one decision: --allow, --always, --deny or --reply TEXT")
    if decisions and question is None:
        raise UsageError(f"name the question answered: --question ID (agentlaunch answer {agent} shows it)")
    if host is not None:
        from agentlaunch.cli.on_host import flag, run_on, value

        given = [*flag(allow, "--allow"), *flag(always, "--always"), *flag(deny, "--deny"), *value(reply, "--reply")]
        given += [*value(question, "--question"), *value(session, "--session"), *flag(as_json, "--json")]
        raise typer.Exit(run_on(host, ["answer", agent, *given], what="answer", socket=False))
    if decisions:
        assert question is not None
        _answered(agent, give_answer(agent, question, decisions[0], reply, session, agents_dir), as_json)
        return
    asked = open_question(agent, session, agents_dir)
    if as_json:
        _print_json({"agent": agent, "question": asked})
        return
    _show(agent, asked)
    if sys.stdin.isatty() and sys.stdout.isatty():
        _ask_person(agent, asked, session, agents_dir)


def _show(agent: str, asked: dict[str, Any]) -> None:
    tool, said, given = (visible(str(asked.get(k, ""))) for k in ("tool", "asks", "input"))
    options = ", ".join(str(o) for o in asked.get("options") or [])
    sys.stdout.write(f"{visible(agent)} asks: {said}\n  tool: {tool}\n  input: {given}\n")
    sys.stdout.write(f"  options: {options}\n  question: {visible(str(asked.get('id', '')))}\n")
    sys.stdout.flush()


def _ask_person(agent: str, asked: dict[str, Any], session: str | None, agents_dir: Any) -> None:
    offered = [o for o in asked.get("options") or [] if isinstance(o, str)]
    keys = "  ".join(f"{k} {KEY_WORDS[d]}" for k, d in KEYS.items() if d in offered)
    try:
        key = input(f"answer ({keys}, Enter: leave it): ").strip()
    except EOFError:
        key = ""
    decision = KEYS.get(key)
    if decision is None or decision not in offered:
        err.print("[dim]left open: nothing answered[/]", markup=True)
        return
    text = input("reply: ") if decision == "reply" else None
    _answered(agent, give_answer(agent, str(asked.get("id")), decision, text, session, agents_dir), False)


def _answered(agent: str, reply: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _print_json({"agent": agent, "answered": reply.get("answered"), "decision": reply.get("decision")})
        return
    word = DECISION_WORDS.get(str(reply.get("decision")), "answered")
    err.print(f"{for_markup(agent)}: {word} (question {for_markup(str(reply.get('answered')))})", markup=True, highlight=False)


def _print_json(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()
