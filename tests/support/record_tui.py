"""Record what the real CLIs' interfaces write for programs, as the native-mode unit tests' data.

    python -m tests.support.record_tui [--out DIR] [claude|codex|codex_compact|gemini ...]   (default: all four)

Claude Code (into ``tests/data/claude_tui``): each scenario starts the TUI on a PTY in a
fresh seeded HOME (see :mod:`testbed.claude_tui`) against the fake API
on 127.0.0.1, with ``--settings`` adding a status-line command and a hook on
every event, all of them appending their stdin JSON to one log. It writes,
per scenario: ``transcript.jsonl`` (the session's transcript, as written),
``reports.jsonl`` (one ``{"event", "payload"}`` per hook or status-line run,
in order), ``requests.jsonl`` (one summary per Messages request the fake API
answered, in order: model, message count, how the last message starts) and
``screen.txt`` (the last screen).

Codex and Gemini (into ``tests/data/native``; see :mod:`testbed.native_flows`): Codex 0.171 with a tool turn
(``echo hi``) and a second typed turn, then ``codex resume`` with a third;
Gemini 0.61 with a tool turn (``read_file``) and a second turn, then
``gemini --resume`` with a third; Codex with a turn then ``/compact``. It keeps each run's rollout / session file
and Codex's hook reports, with the temporary paths replaced by placeholders
(``/HOME``, ``/WORK``), so the unit tests read exactly what the CLIs wrote.

Claude's scenarios and Codex's ``/compact`` wait for what each step needs on the screen or in the reports, never
for a fixed time (the typed turns of :mod:`testbed.native_flows` still pause before typing: an interface
drops keys sent while it loads). The CLIs are the pinned ones (:func:`testbed.clis.ensure_cli`).
"""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, Planned, text_reply, tool_reply
from agentlaunch.fakeapi.gemini import FunctionCallReply, GeminiFake, GeminiScript, GeminiUsage, prepare_gemini_home
from agentlaunch.fakeapi.gemini import TextReply as GeminiText
from agentlaunch.fakeapi.responses import ResponsesScript, ResponsesUsage, ShellCallReply, TextReply
from testbed.claude_tui import quit_with_ctrl_c, seed_home, tui_env
from testbed.clis import ensure_cli
from testbed.native_flows import codex_turns, gemini_turns
from testbed.native_tui import TitledResponsesFake, seed_codex_home
from testbed.pty_screen import Screen, spawn

HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionDenied",
    "Notification",
    "Stop",
    "StopFailure",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
    "PostToolBatch",
)
ALL_HOOK_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
    "PreSkillShellCommand",
)
"""The 34 hook events Claude Code 2.1.332's settings take, in its own order (the event list in its shipped code)."""
LOGGER = """import json, sys
raw = sys.stdin.read()
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"event": sys.argv[2], "raw": raw}) + "\\n")
if sys.argv[2] == "statusline":
    print("recorder status line")
"""
REPO = Path(__file__).resolve().parents[2]


def settings(log: Path, logger: Path, events: tuple[str, ...] = HOOK_EVENTS) -> dict[str, object]:
    """``--settings`` with a logging status line and a logging hook on each of ``events``."""

    def cmd(event: str) -> str:
        return shlex.join([sys.executable, str(logger), str(log), event])

    return {
        "statusLine": {"type": "command", "command": cmd("statusline")},
        "hooks": {e: [{"hooks": [{"type": "command", "command": cmd(e)}]}] for e in events},
    }


def prepared(root: Path, files: dict[str, str]) -> tuple[Path, Path, Path, Path]:
    """Under ``root``: a seeded home, a working folder holding ``files``, the log and its logger script."""
    home, work = root / "home", root / "work"
    home.mkdir()
    work.mkdir()
    for name, text in files.items():
        (work / name).write_text(text)
    seed_home(home, [work])
    log, logger = root / "log.jsonl", root / "logger.py"
    logger.write_text(LOGGER)
    return home, work, log, logger


def logged(log: Path) -> list[str]:
    """The events the hooks and the status line logged so far, in order."""
    return [json.loads(line)["event"] for line in log.read_text().splitlines()] if log.exists() else []


def settled_after(log: Path, event: str) -> bool:
    """``event`` was logged and the status line ran after it (the screen drawn once more)."""
    events = logged(log)
    return event in events and "statusline" in events[len(events) - events[::-1].index(event) :]


def tool_turn(s: Screen, log: Path) -> None:
    """A Write that asks permission (answered yes once Claude Code notified of it, after 6 s), then a text answer."""
    s.wait_for(lambda t: "Do you want to create" in t, 60, "the permission prompt")
    s.until(lambda: "Notification" in logged(log), 30, "the permission_prompt notification")
    s.child.send("1")
    s.wait_for(lambda t: "Done." in t, 60, "the answer")
    s.until(lambda: settled_after(log, "Stop"), 30, "the turn's Stop and the status line after it")
    quit_with_ctrl_c(s)


def denied_turn(s: Screen, log: Path) -> None:
    """A Bash call the person refuses (Esc at the prompt)."""
    s.wait_for(lambda t: "Do you want to proceed" in t, 60, "the permission prompt")
    s.child.send("\x1b")
    s.wait_for(lambda t: "Interrupted" in t or "instead" in t, 60, "the refusal")
    s.until(lambda: settled_after(log, "PermissionRequest"), 30, "the status line after the refusal")
    quit_with_ctrl_c(s)


def slow_then_compact(s: Screen, log: Path) -> None:
    """A slowly streamed two-block answer (so lines are written before the call's final usage), then /compact."""
    s.wait_for(lambda t: "Slow answer end" in t, 90, "the slow answer")
    s.until(lambda: settled_after(log, "Stop"), 30, "the turn's Stop and the status line after it")
    s.type_when_taken("/compact")
    s.child.send("\r")
    s.wait_for(lambda t: "ompacted" in t, 90, "the compaction")
    s.until(lambda: settled_after(log, "PostCompact"), 30, "PostCompact and the status line after it")
    quit_with_ctrl_c(s)


SCENARIOS: dict[str, tuple[list[Planned], str, Callable[[Screen, Path], None]]] = {
    "tool_turn": (
        [
            tool_reply("Write", {"file_path": "out.txt", "content": "hello\n"}, ApiUsage(15, 2000, 11000, 40), text="Writing."),
            text_reply("Done.", ApiUsage(6, 120, 13000, 4)),
        ],
        "write out.txt",
        tool_turn,
    ),
    "denied_turn": (
        [tool_reply("Bash", {"command": "rm -rf build", "description": "Remove build"}, ApiUsage(21, 1000, 9000, 25))],
        "clean the build",
        denied_turn,
    ),
    "slow_compact": (
        [
            tool_reply(
                "Read", {"file_path": "README.md"}, ApiUsage(11, 4000, 9000, 33), text="Looking first, slowly.", delay=0.15
            ),
            text_reply("Slow answer end", ApiUsage(9, 300, 13000, 12), delay=0.15),
            text_reply("Summary of the talk so far.", ApiUsage(500, 0, 0, 80)),
        ],
        "look around",
        slow_then_compact,
    ),
}


def request_summary(n: int, body: dict[str, object]) -> dict[str, object]:
    """What a test needs of one Messages request: its order, model, size and how its last user message starts."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    last = messages[-1] if messages else {}  # type: ignore[index]
    content = last.get("content") if isinstance(last, dict) else ""
    text = content if isinstance(content, str) else json.dumps(content)
    system = body.get("system")
    system_text = system if isinstance(system, str) else json.dumps(system)
    return {
        "n": n,
        "model": body.get("model"),
        "messages": len(messages),
        "tools": len(body.get("tools") or []),  # type: ignore[arg-type]
        "max_tokens": body.get("max_tokens"),
        "last_user": text[:200],
        "last_user_end": text[-300:],
        "system_end": system_text[-200:],
    }


def record(name: str, claude: str, out: Path) -> None:
    plans, prompt, drive = SCENARIOS[name]
    root = Path(tempfile.mkdtemp(prefix="alrec-"))
    home, work, log, logger = prepared(root, {"README.md": "# demo\n"})
    session = str(uuid.uuid4())
    api = FakeAnthropic(plans)
    with api.serve() as server:
        argv = [claude, "--session-id", session, "--model", "claude-sonnet-4-5"]
        argv += ["--settings", json.dumps(settings(log, logger)), prompt]
        s = spawn(argv, tui_env(server.url, home), work)
        try:
            drive(s, log)
        finally:
            if s.child.isalive():
                s.child.terminate(force=True)
    dest = out / name
    dest.mkdir(parents=True, exist_ok=True)
    transcript = next((home / ".claude" / "projects").glob(f"*/{session}.jsonl"))
    (dest / "transcript.jsonl").write_bytes(transcript.read_bytes())
    with (dest / "reports.jsonl").open("w") as f:
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            try:
                payload = json.loads(entry["raw"])
            except ValueError:
                payload = None
            f.write(json.dumps({"event": entry["event"], "payload": payload}) + "\n")
    with (dest / "requests.jsonl").open("w") as f:
        for n, request in enumerate(api.message_requests(), 1):
            f.write(json.dumps(request_summary(n, request.body)) + "\n")
    (dest / "screen.txt").write_text(s.text() + "\n")
    print(f"{name}: {dest} ({root})")


# -- Codex and Gemini -------------------------------------------------------------------------------------------

CODEX_CALLS = [
    ShellCallReply("echo hi", ResponsesUsage(9000, 8000, 7, 3)),
    TextReply("first answer done", ResponsesUsage(9100, 9000, 5, 0)),
    TextReply("second answer done", ResponsesUsage(9200, 9100, 4, 0)),
    TextReply("third answer done", ResponsesUsage(9300, 9200, 6, 1)),
]
GEMINI_CALLS = [
    GeminiUsage(prompt=9000, output=7, cached=6000, thoughts=3),
    GeminiUsage(prompt=9100, output=5, cached=9000),
    GeminiUsage(prompt=9200, output=4, cached=9100),
    GeminiUsage(prompt=9300, output=6, cached=9200, thoughts=2),
]
GEMINI_MODEL = "gemini-2.5-pro"


def scrub(text: str, places: dict[str, str]) -> str:
    for real, placeholder in sorted(places.items(), key=lambda p: -len(p[0])):
        text = text.replace(real, placeholder)
    return text


def record_codex(out: Path, root: Path) -> None:
    codex = ensure_cli("codex")
    workdir = root / "work"
    workdir.mkdir()
    with TitledResponsesFake(ResponsesScript(CODEX_CALLS)) as api:
        env = seed_codex_home(root / "home", api.base_url, workdir)
        first = codex_turns(codex, env, workdir, ["run echo hi please", "and again"], ["first answer done", "second answer done"])
        assert first.rollout is not None
        thread = first.rollout.name[-len("00000000-0000-0000-0000-000000000000.jsonl") : -len(".jsonl")]
        new_session = first.rollout.read_text()
        resumed = codex_turns(codex, env, workdir, ["one more"], ["third answer done"], session_id=thread)
        assert resumed.rollout == first.rollout
    places = {str(root / "home"): "/HOME", str(workdir): "/WORK"}
    (out / "codex_tui.rollout.jsonl").write_text(scrub(new_session, places))
    (out / "codex_tui_resumed.rollout.jsonl").write_text(scrub(resumed.rollout.read_text(), places))
    hooks = [{"event": r.event, "payload": r.payload} for r in first.followed.reports + resumed.followed.reports]
    (out / "codex_tui.hooks.jsonl").write_text("".join(scrub(json.dumps(h), places) + "\n" for h in hooks))


def record_codex_compact(out: Path, root: Path) -> None:
    """A turn, then ``/compact`` typed: Codex's compaction call, its ``compacted`` line and Pre/PostCompact hooks."""
    from agentlaunch.events import Compaction
    from agentlaunch.fakeapi.responses import codex_quiet_args
    from agentlaunch.providers.native.codex import native_extras
    from testbed.native_flows import Followed, context, finish, follower, record_reports, runtime_dir
    from testbed.pty_screen import spawn

    workdir = root / "work"
    workdir.mkdir()
    replies = [
        TextReply("first answer done", ResponsesUsage(9000, 8000, 7, 0)),
        TextReply("SUMMARY of the work so far", ResponsesUsage(9100, 9000, 50, 0)),
    ]
    with TitledResponsesFake(ResponsesScript(replies)) as api:
        env = seed_codex_home(root / "home", api.base_url, workdir)
        runtime, followed = runtime_dir(), Followed()
        extras = native_extras(context("coder", env, workdir, runtime))
        record_reports(extras, followed)
        tui = spawn([str(ensure_cli("codex")), *codex_quiet_args(), *extras.argv, "hello"], env, workdir)
        step = follower(extras.sources, followed)
        try:
            tui.until(lambda: "first answer done" in tui.text(), 60, "the first answer", every=step)
            tui.until(lambda: "Stop" in [r.event for r in followed.reports], 30, "the turn's Stop hook", every=step)
            tui.child.send("/compact")
            tui.until(lambda: "/compact" in tui.text(), 10, "the typed /compact", every=step)
            tui.child.send("\r")
            tui.until(lambda: "PostCompact" in [r.event for r in followed.reports], 60, "PostCompact", every=step)
            tui.until(lambda: bool(followed.of(Compaction)), 30, "the rollout's compacted line", every=step)
        finally:
            tui.close()
        finish(extras.sources, followed)
        (rollout,) = sorted((root / "home" / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    places = {str(root / "home"): "/HOME", str(workdir): "/WORK"}
    (out / "codex_tui_compact.rollout.jsonl").write_text(scrub(rollout.read_text(), places))
    hooks = [{"event": r.event, "payload": r.payload} for r in followed.reports]
    (out / "codex_tui_compact.hooks.jsonl").write_text("".join(scrub(json.dumps(h), places) + "\n" for h in hooks))


def record_gemini(out: Path, root: Path) -> None:
    gemini = ensure_cli("gemini")
    workdir = root / "work"
    workdir.mkdir()
    (workdir / "notes.txt").write_text("hello notes\n")
    script = GeminiScript(
        [
            FunctionCallReply("read_file", {"file_path": str(workdir / "notes.txt")}, GEMINI_CALLS[0]),
            GeminiText("first answer done", GEMINI_CALLS[1]),
            GeminiText("second answer done", GEMINI_CALLS[2]),
            GeminiText("third answer done", GEMINI_CALLS[3]),
        ]
    )
    with GeminiFake(script) as api:
        env = prepare_gemini_home(root / "home", api.base_url)
        env["TERM"] = "xterm-256color"
        first = gemini_turns(
            gemini,
            env,
            workdir,
            GEMINI_MODEL,
            ["read notes.txt please", "and again"],
            ["first answer done", "second answer done"],
        )
        (session,) = first.files
        new_session = session.read_text()
        session_id = json.loads(new_session.splitlines()[0])["sessionId"]
        resumed = gemini_turns(gemini, env, workdir, GEMINI_MODEL, ["one more"], ["third answer done"], session_id=session_id)
    places = {str(root / "home"): "/HOME", str(workdir): "/WORK"}
    (out / "gemini_tui.session.jsonl").write_text(scrub(new_session, places))
    for i, path in enumerate(resumed.files):
        (out / f"gemini_tui_resumed.{i}.session.jsonl").write_text(scrub(path.read_text(), places))


CLAUDE_DATA = REPO / "tests" / "data" / "claude_tui"
NATIVE_DATA = REPO / "tests" / "data" / "native"


def record_claude(out: Path) -> None:
    claude = str(ensure_cli("claude"))
    for name in SCENARIOS:
        record(name, claude, out)


def main(argv: list[str]) -> int:
    args = argv[1:]
    out: Path | None = None
    if "--out" in args:
        at = args.index("--out")
        out = Path(args[at + 1])
        del args[at : at + 2]
    runs = {"claude": record_claude, "codex": record_codex, "codex_compact": record_codex_compact, "gemini": record_gemini}
    for name in args or list(runs):
        if name == "claude":
            record_claude(out or CLAUDE_DATA)
            continue
        folder = out or NATIVE_DATA
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="agentlaunch-rec-") as tmp:
            runs[name](folder, Path(tmp))  # type: ignore[operator]
        print(f"recorded {name} into {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
