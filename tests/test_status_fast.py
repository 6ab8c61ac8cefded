"""`status --line` and `status --json` answered on the standard library only, byte for byte as before.

The golden files in tests/golden/status_fast/ are what the typer implementation printed (main at
7a6ba2a: the plan's limits, stalled/retrying/done, worktree setups; each row's `"host": null` added by issue 42)
for the records :func:`write_records` makes; the fast path must print the same bytes, and so must the full CLI
(`python -c 'from agentlaunch.cli import main'`), since both format from :mod:`agentlaunch.live.status_read`.
Regenerate them from another checkout with ``python -m tests.test_status_fast --write-golden CHECKOUT``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch import paths
from agentlaunch.fleet import panes
from agentlaunch.fleet.records import config_folder
from agentlaunch.live import status_fast
from agentlaunch.live.status import process_start
from agentlaunch.live.status_read import status_folder
from tests.support.tmux_panes import die_with

GOLDEN = Path(__file__).parent / "golden" / "status_fast"
REPO = Path(__file__).resolve().parent.parent
FUTURE = "2099-01-01T00:00:00+00:00"  # a state entered "in the future" reads "for 0s" at any time: stable output
PAST = "2001-01-01T00:00:00+00:00"  # a cache that expired then reads "cache cold" at any time
HEAVY = (
    "rich",
    "typer",
    "click",
    "pydantic",
    "jinja2",
    "pathlib",
    "dataclasses",
    "subprocess",
    "tempfile",
    "agentlaunch.cli",
    "agentlaunch.launch",
    "platformdirs",
)
LINE_AGENTS = (
    "demo",
    "ünï‮code",
    "twice",
    "gone",
    "hostile",
    "observed",
    "nobody",
    "crashed",
    "finished",
    "retry",
    "stuck",
    "failed",
    "settingup",
    "setupdone",
    "running",
)


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def full(pid: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "version": 1,
        "agent": "demo",
        "display": "Demo",
        "provider": "claude",
        "model": "claude-sonnet-4-5",
        "session_id": "0b7c3a52-1c1e-4a51-9f0e-4a3e2f7b9d10",
        "resumed": False,
        "working_dir": "/work/project",
        "pid": pid,
        "pid_start": process_start(pid),
        "cli_pid": None,
        "control": None,
        "state": "waiting",
        "state_since": FUTURE,
        "turns": 3,
        "calls": 7,
        "usage": {"input": 1200, "cache_write": 30000, "cache_read": 90000, "output": 2100, "reasoning": 0},
        "context": 45_123,
        "window": 200_000,
        "window_source": "model",
        "percent": 22.6,
        "to_compaction": 109_877,
        "cost_usd": 0.412345,
        "cost": "$0.4123",
        "priced_calls": 7,
        "unpriced_calls": 0,
        "cache": {"expires_at": PAST, "ttl_s": 300, "context": 45_123, "next_turn_cold_usd": 0.17, "next_turn_warm_usd": None},
        "started": "2026-12-01T10:00:00+00:00",
        "updated": "2026-12-01T10:05:00+00:00",
    }
    base.update(fields)
    return base


def write_records(folder: Path, pid: int, gone: int) -> None:
    """Records of every kind `status` meets: typical, asking, hostile text and types, stale, twice, observed."""
    folder.mkdir(parents=True)
    records: dict[str, Any] = {
        "101.json": full(
            pid,
            rate_limits={
                "five_hour": {"used_percent": 42.0, "resets_at": FUTURE},
                "seven_day": {"used_percent": 7.5, "resets_at": None},
            },
        ),
        "102.json": full(pid, agent="ünï‮code", state="asking", model="m\x1b]0;title\x07", cost="$1\u202e.00", display="Ü"),
        "103.json": full(
            pid,
            agent="twice",
            state="thinking",
            state_since=None,
            started="2026-12-01T09:00:00+00:00",
            updated="2026-12-01T11:00:00+00:00",
        ),
        "104.json": full(
            pid,
            agent="twice",
            state="tool",
            updated="2026-12-01T12:00:00+00:00",
            cache=None,
            percent=None,
            context=0,
            to_compaction=-12,
            cost=None,
        ),
        "105.json": full(gone, agent="gone", pid_start="0"),  # stale even if its pid was handed out again
        "106.json": full(
            pid,
            agent="hostile",
            context="x",
            usage=[1, 2],
            percent=float("inf"),
            turns=2**70,
            calls=True,
            extra_text="kept",
            extra_list=[1],
            extra_obj={"a": 1},
            cache={"expires_at": 5, "ttl_s": "x"},
            rate_limits={"five_hour": {"used_percent": 140, "resets_at": "soon"}, "seven_day": [1]},
        ),
        "107.json": full(
            pid,
            agent="observed",
            window_source="observed",
            percent=100.0,
            to_compaction=None,
            cost="unpriced",
            context=98_765,
            state="starting",
        ),
        "108.json": full(2**70, agent="hugepid"),
        "110.json": full(
            pid,
            agent="finished",
            done=True,
            worktree_setup={"ok": True, "exit": None, "command": None, "log": "/nowhere/finished.log"},
        ),
        "111.json": full(pid, agent="retry", state="retrying", state_reason="529 overloaded, attempt 3/10"),
        "112.json": full(pid, agent="stuck", state="stalled", state_reason="its turn has heard nothing from the CLI"),
        "113.json": full(
            pid, agent="failed", state_reason="x" * 100, done="yes", worktree_setup={"ok": 1, "exit": "x", "command": 5}
        ),
    }
    for name, data in records.items():
        (folder / name).write_text(json.dumps(data, ensure_ascii=False, indent=1, allow_nan=True) + "\n")
    (folder / "109.json").write_text("not json")
    (folder / ".hidden.json").write_text(json.dumps(full(pid, agent="hidden")))
    (folder / "notes.txt").write_text(json.dumps(full(pid, agent="txt")))
    setups = folder.parent / "worktree-setup"  # main's worktree_setup records: "/" is a worktree that is always there
    setups.mkdir()
    for name, setup in {
        "settingup-1.json": {
            "agent": "settingup",
            "worktree": "/",
            "log": "/nowhere/s.log",
            "ok": False,
            "exit": 2,
            "command": "npm ci",
        },
        "setupdone-1.json": {"agent": "setupdone", "worktree": "/", "log": "/nowhere/d.log", "ok": True},
        "setupgone-1.json": {"agent": "setupgone", "worktree": "/nowhere/at/all", "log": "/nowhere/g.log", "ok": False},
        "running-1.json": {
            "agent": "running",
            "worktree": "/",
            "log": "/nowhere/r.log",
            "ok": None,
            "command": "make",
            "pid": pid,
            "pid_start": process_start(pid),
        },
    }.items():
        (setups / name).write_text(json.dumps(setup))


class Panes:
    """A private tmux server with one agent pane that died with exit 3 (its error kept: remain-on-exit)."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self.tmux("new-session", "-d", "-s", "agentlaunch", "sleep", "600", ";", "set-option", "-g", "remain-on-exit", "on")
        pane = self.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "sh", "-c", "read x; exit 3").strip()
        self.tmux("set-option", "-p", "-t", pane, "@agentlaunch_agent", "crashed")
        die_with(self.tmux, pane, 3)
        assert self.status(pane) == ("1", "3")

    def status(self, pane: str) -> tuple[str, str]:
        dead, _, code = self.tmux("display-message", "-p", "-t", pane, "#{pane_dead} #{pane_dead_status}").strip().partition(" ")
        return dead, code

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


def commands() -> dict[str, list[str]]:
    """Each output compared: ``--line`` for every agent (the lines first: ``--json`` removes stale records), then ``--json``."""
    cases = {f"line-{i}": ["status", "--line", agent] for i, agent in enumerate(LINE_AGENTS)}
    cases["line-equals"] = ["status", "--line=demo"]
    cases["json"] = ["status", "--json"]
    return cases


def outputs(state: Path, socket: str, prefix: list[str], pythonpath: str | None = None) -> dict[str, str]:
    env = {**os.environ, "AGENTLAUNCH_STATE_DIR": str(state), "AGENTLAUNCH_TMUX_SOCKET": socket, "TZ": "UTC"}
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    found = {}
    for name, args in commands().items():
        done = subprocess.run([*prefix, *args], capture_output=True, env=env, check=False, timeout=120, cwd=state)
        assert done.returncode == 0 and done.stderr == b"", (name, done.returncode, done.stderr.decode())
        found[name] = done.stdout.decode("utf-8")
    return found


def placeholders(text: str, pid: int, gone: int) -> str:
    return (
        text.replace(f'"pid": {pid},', '"pid": {PID},')
        .replace(f'"pid": {gone},', '"pid": {GONE},')
        .replace(f'"pid_start": {json.dumps(process_start(pid))},', '"pid_start": {PID_START},')
    )


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[tuple[Path, str, int, int]]:
    gone = dead_pid()
    write_records(tmp_path / "state" / "status", os.getpid(), gone)
    panes = Panes(f"al-fast-{uuid.uuid4().hex[:10]}")  # a server of its own: one being killed may still hold a name
    try:
        yield tmp_path / "state", panes.socket, os.getpid(), gone
    finally:
        panes.close()


FAST = [sys.executable, "-m", "agentlaunch"]
FULL_CLI = [sys.executable, "-c", "import sys; sys.argv[0] = 'agentlaunch'; from agentlaunch.cli import main; main()"]


@pytest.mark.parametrize("prefix", [FAST, FULL_CLI], ids=["fast", "full-cli"])
def test_the_output_is_byte_for_byte_what_the_typer_implementation_printed(
    scene: tuple[Path, str, int, int], prefix: list[str]
) -> None:
    state, socket, pid, gone = scene
    found = outputs(state, socket, prefix)
    for name, text in found.items():
        assert placeholders(text, pid, gone) == (GOLDEN / f"{name}.txt").read_text(encoding="utf-8"), name
    assert "crashed · dead (exit 3) · tmux agentlaunch %1" in found["line-7"]  # the dead pane was found, not an empty line
    assert not (state / "status" / "105.json").exists()  # --json removed the stale record, as before


def imported(args: list[str], env: dict[str, str]) -> set[str]:
    """The modules `agentlaunch ARGS` imports beyond what this interpreter imports at startup on its own.

    A site-packages `.pth` file may import modules before any program runs (one on the CI machine imports certifi, and
    with it pathlib, tempfile and typing); those are the machine's, not the fast path's.
    """

    def modules(*argv: str) -> set[str]:
        done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, env=env, check=True)
        return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}

    return modules("-m", "agentlaunch", *args) - modules("-c", "pass")


@pytest.mark.parametrize("args", [["status", "--line", "demo"], ["status", "--line", "nobody"], ["status", "--json"]])
def test_line_and_json_import_the_standard_library_only(scene: tuple[Path, str, int, int], args: list[str]) -> None:
    state, socket, _, _ = scene
    env = {**os.environ, "AGENTLAUNCH_STATE_DIR": str(state), "AGENTLAUNCH_TMUX_SOCKET": socket}
    modules = imported(args, env)
    assert "agentlaunch.live.status_fast" in modules  # the fast path ran
    heavy = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []


@pytest.mark.parametrize(
    ("variable", "xdg", "lean", "full"),
    [
        ("AGENTLAUNCH_STATE_DIR", "XDG_STATE_HOME", status_folder, lambda: paths.state_dir() / "status"),
        ("AGENTLAUNCH_CONFIG_DIR", "XDG_CONFIG_HOME", config_folder, lambda: paths.config_dir()),
    ],
    ids=["state", "config"],
)
def test_without_a_folder_variable_the_folder_is_the_platform_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, xdg: str, lean: Callable[[], str], full: Callable[[], Path]
) -> None:
    monkeypatch.delenv(variable, raising=False)
    for home, xdg_value in ((str(tmp_path), None), (str(tmp_path), str(tmp_path / "x")), (str(tmp_path) + "/", "  ")):
        monkeypatch.setenv("HOME", home)
        if xdg_value is None:
            monkeypatch.delenv(xdg, raising=False)
        else:
            monkeypatch.setenv(xdg, xdg_value)
        assert Path(lean()) == full()
    monkeypatch.setenv(variable, "~/s")
    assert Path(lean()) == full()


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--watch"],
        ["--json", "--watch"],
        ["--line", "a", "--json"],
        ["--line"],
        ["--line", "--json"],
        ["--line="],
        ["--line", "a", "--line", "b"],
        ["--json", "--json"],
        ["--socket", "bad;name", "--json"],
        ["-L"],
        ["--help"],
        ["--interval", "2"],
        ["--", "--json"],
        ["-Lx", "--json"],
        ["--line", "-x"],
    ],
)
def test_every_other_form_goes_to_the_full_cli(args: list[str]) -> None:
    assert status_fast.parse(args) is None


def test_the_forms_answered_here() -> None:
    assert status_fast.parse(["--line", "demo"]) == ("line", "demo", os.environ.get("AGENTLAUNCH_TMUX_SOCKET") or None)
    assert status_fast.parse(["--json", "-L", "s1"]) == ("json", None, "s1")
    assert status_fast.parse(["--socket=s_2", "--line=x"]) == ("line", "x", "s_2")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--line", "a", "--json"], 2, "does not combine"),
        (["--json", "--watch"], 2, "--watch shows a live table"),
        (["--json", "-L", "bad;name"], 2, "not allowed"),
        (["--line"], 2, "requires an argument"),
    ],
)
def test_bad_forms_still_give_the_full_clis_usage_errors(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    env = {**os.environ, "AGENTLAUNCH_STATE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "status", *args], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == code and message in done.stderr and "Traceback" not in done.stderr


def test_without_tmux_there_are_no_dead_panes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert status_fast.dead_panes(None) == []
    assert panes.run_quietly([str(tmp_path / "missing")]) == (b"", 127)


if __name__ == "__main__" and sys.argv[1:2] == ["--write-golden"]:
    import tempfile

    checkout = sys.argv[2]
    with tempfile.TemporaryDirectory() as folder:
        gone = dead_pid()
        write_records(Path(folder) / "state" / "status", os.getpid(), gone)
        panes = Panes(f"al-fast-gold-{uuid.uuid4().hex[:10]}")
        try:
            found = outputs(Path(folder) / "state", panes.socket, [sys.executable, "-m", "agentlaunch"], checkout)
        finally:
            panes.close()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, text in found.items():
        (GOLDEN / f"{name}.txt").write_text(placeholders(text, os.getpid(), gone), encoding="utf-8")
