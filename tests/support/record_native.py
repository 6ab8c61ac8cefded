"""Re-record the native-mode unit-test data from the real Codex and Gemini TUIs against the fake APIs.

    python -m tests.support.record_native tests/data/native

Runs (see :mod:`tests.support.native_flows`): Codex 0.171 with a tool turn
(``echo hi``) and a second typed turn, then ``codex resume`` with a third;
Gemini 0.61 with a tool turn (``read_file``) and a second turn, then
``gemini --resume`` with a third; Codex with a turn then ``/compact``. It keeps each run's rollout / session file
and Codex's hook reports, with the temporary paths replaced by placeholders
(``/HOME``, ``/WORK``), so the unit tests read exactly what the CLIs wrote.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from agentlaunch.fakeapi.gemini import FunctionCallReply, GeminiFake, GeminiScript, GeminiUsage, prepare_gemini_home
from agentlaunch.fakeapi.gemini import TextReply as GeminiText
from agentlaunch.fakeapi.responses import ResponsesScript, ResponsesUsage, ShellCallReply, TextReply
from tests.support.native_flows import cli_path, codex_turns, gemini_turns
from tests.support.native_tui import TitledResponsesFake, seed_codex_home

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
    codex = cli_path("codex")
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
    from agentlaunch.fakeapi.responses import codex_quiet_args
    from agentlaunch.providers.native.codex import native_extras
    from tests.support.native_flows import Followed, context, finish, follower, record_reports, runtime_dir
    from tests.support.pty_screen import spawn

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
        tui = spawn([str(cli_path("codex")), *codex_quiet_args(), *extras.argv, "hello"], env, workdir)
        step = follower(extras.sources, followed)
        try:
            assert tui.within(lambda: "first answer done" in tui.text(), 60, every=step), tui.text()
            tui.within(lambda: False, 1.0, every=step)
            tui.child.send("/compact")
            tui.within(lambda: False, 0.5, every=step)
            tui.child.send("\r")
            assert tui.within(lambda: "PostCompact" in [r.event for r in followed.reports], 60, every=step)
            tui.within(lambda: False, 2.0, every=step)
        finally:
            tui.close()
        finish(extras.sources, followed)
        (rollout,) = sorted((root / "home" / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    places = {str(root / "home"): "/HOME", str(workdir): "/WORK"}
    (out / "codex_tui_compact.rollout.jsonl").write_text(scrub(rollout.read_text(), places))
    hooks = [{"event": r.event, "payload": r.payload} for r in followed.reports]
    (out / "codex_tui_compact.hooks.jsonl").write_text("".join(scrub(json.dumps(h), places) + "\n" for h in hooks))


def record_gemini(out: Path, root: Path) -> None:
    gemini = cli_path("gemini")
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


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "tests/data/native")
    out.mkdir(parents=True, exist_ok=True)
    which = argv[2:] or ["codex", "codex_compact", "gemini"]
    for name in which:
        with tempfile.TemporaryDirectory(prefix="agentlaunch-rec-") as tmp:
            {"codex": record_codex, "codex_compact": record_codex_compact, "gemini": record_gemini}[name](out, Path(tmp))
            print(f"recorded {name} into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
