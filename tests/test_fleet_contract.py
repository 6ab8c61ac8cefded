"""`agentlaunch fleet --json` is a contract: version 1, its fields pinned here and documented in docs/fleet.md.

A change to what an agent object holds must be deliberate: the golden file (tests/golden/fleet/v1.json) is what
version 1 prints for the fleet :func:`scene` makes; regenerate it with
``python -m tests.test_fleet_contract --write-golden`` only with a new version or a field added (docs/fleet.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentlaunch.fleet import contract, states
from agentlaunch.fleet.model import Fleet, join
from agentlaunch.fleet.panes import parse
from agentlaunch.fleet.records import read_folder
from agentlaunch.fleet.setups import Setup
from agentlaunch.processes import process_start

GOLDEN = Path(__file__).parent / "golden" / "fleet" / "v1.json"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "fleet.md"
V1_FIELDS = (
    "agent",
    "label",
    "state",
    "needs_you",
    "running",
    "session_id",
    "fork_of",
    "fork_number",
    "pid",
    "working_dir",
    "provider",
    "model",
    "tmux",
    "problem",
    "stopped",
    "setup",
    "record",
    "host",  # added within version 1 (issue 42): null for this machine's agents, a host's name for another's
    "state_source",  # added within version 1 (docs/fleet.md)
)
V1_TMUX = ("session", "pane", "window", "dead", "exit_status")


def scene(folder: Path) -> Fleet:
    """A fleet of every kind of agent: running (a fork too, and one asking), stale, dead, stopped, a failed setup, a
    file that is no record, one defined and stopped by its note, one defined and not running."""
    folder.mkdir(parents=True, exist_ok=True)
    me, parent = os.getpid(), os.getppid()  # the pane runs this process; the other sessions are the parent's
    base = {
        "version": 1,
        "provider": "claude",
        "model": "claude-sonnet-4-5",
        "working_dir": "/work",
        "pid": parent,
        "pid_start": process_start(parent),
        "state": "waiting",
        "cost": "$0.0100",
        "started": "2026-12-06T10:00:00+00:00",
    }
    records = {
        "101.json": {**base, "agent": "cx", "session_id": "s-cx", "pid": me, "pid_start": process_start(me)},
        "102.json": {**base, "agent": "cx", "session_id": "s-fork", "fork_of": "s-cx", "started": "2026-12-06T11:00:00+00:00"},
        "103.json": {
            **base,
            "agent": "asker",
            "session_id": "s-ask",
            "state": "asking",
            "state_reason": "Bash: ls",
            "state_source": "hooks",
        },
        "104.json": {**base, "agent": "gone", "session_id": "s-gone", "pid_start": "0"},
    }
    for name, data in records.items():
        (folder / name).write_text(json.dumps(data))
    (folder / "105.json").write_text('{"torn')
    listing = "\n".join(
        "\t".join(cells)
        for cells in [
            ("cx", "team", "%1", "0", "", str(me), "", "s-cx", "", "", "@1", "cx", "cx"),
            ("crashed", "team", "%2", "1", "3", "1", "", "s-crash", "", "", "@2", "crashed", "crashed"),
            ("halted", "team", "%3", "1", "143", "2", "2 2026-12-06T12:00:00+00:00", "s-halt", "", "", "@3", "halted", "halted"),
        ]
    )
    records_read, unreadable = read_folder(folder, clean=False)
    setup = Setup(
        {"agent": "setup", "worktree": "/work/tree", "log": "/logs/setup.log", "ok": False, "exit": 2, "command": "npm ci"}
    )
    notes = {"noted": {"agent": "noted", "reason": "budget", "at": "2026-12-06T09:00:00+00:00", "session_id": "s-old"}}
    agents = join(
        records_read,
        parse(listing),
        unreadable=unreadable,
        setups=[setup],
        names=["cx", "idle", "noted", "setup"],
        note=notes.get,
    )
    return Fleet(agents, records_read, None, [setup], ["tmux: a problem said once"])


def stable(document: dict[str, Any], folder: Path) -> str:
    """The document as text, the pids and starts of this process and its parent written as placeholders (by key, so
    that no other number is taken for one), and the test's folder as ``<folder>``."""
    names = {os.getpid(): "pid", os.getppid(): "parent"}

    def placed(value: Any) -> Any:
        if isinstance(value, list):
            return [placed(v) for v in value]
        if not isinstance(value, dict):
            return value
        kept = {k: placed(v) for k, v in value.items()}
        if kept.get("pid") in names:  # a record's start beside its pid (two processes may start in the same tick)
            name = names[kept["pid"]]
            kept["pid"] = f"<{name}>"
            if kept.get("pid_start") == process_start(value["pid"]):
                kept["pid_start"] = f"<{name}_start>"
        return kept

    return json.dumps(placed(document), indent=2, ensure_ascii=False).replace(str(folder), "<folder>") + "\n"


def test_version_1_prints_what_the_golden_file_holds(tmp_path: Path) -> None:
    assert stable(contract.fleet_json(scene(tmp_path)), tmp_path) == GOLDEN.read_text(encoding="utf-8")


def test_every_agent_object_has_exactly_the_fields_of_version_1(tmp_path: Path) -> None:
    document = contract.fleet_json(scene(tmp_path))
    assert document["version"] == contract.VERSION == 1 and list(document) == ["version", "agents", "problems"]
    assert contract.AGENT_FIELDS == V1_FIELDS and contract.TMUX_FIELDS == V1_TMUX
    for agent in document["agents"]:
        assert tuple(agent) == V1_FIELDS
        assert agent["tmux"] is None or tuple(agent["tmux"]) == V1_TMUX
        assert agent["state"] in {s.replace(" ", "-") for s in contract.STATES}
    assert {a["state"] for a in document["agents"]} >= {
        "waiting",
        "asking",
        "stale",
        "dead",
        "stopped",
        "setup-failed",
        "unreadable",
        "not-running",
    }


def test_the_docs_name_every_field_and_state() -> None:
    text = DOCS.read_text(encoding="utf-8")
    missing = [f for f in (*V1_FIELDS, *V1_TMUX) if f"`{f}`" not in text]
    missing += [s for s in contract.STATES if f"`{s.replace(' ', '-')}`" not in text]
    assert missing == []


def test_the_command_prints_the_contract(tmp_path: Path) -> None:
    scene(tmp_path / "status")
    env = {
        **os.environ,
        "AGENTLAUNCH_STATE_DIR": str(tmp_path),
        "AGENTLAUNCH_TMUX_SOCKET": f"al-none-{os.getpid()}",
        "AGENTLAUNCH_AGENTS_DIR": str(tmp_path / "agents"),
    }
    (tmp_path / "agents" / "idle").mkdir(parents=True)
    (tmp_path / "agents" / "idle" / "agent.yaml").write_text("provider: fake\n")
    done = subprocess.run(
        [sys.executable, "-m", "agentlaunch", "fleet", "--json"], capture_output=True, text=True, env=env, check=True
    )
    document = json.loads(done.stdout)
    assert document["version"] == 1 and document["problems"] == []
    shown = {(a["label"], a["state"]) for a in document["agents"]}
    assert shown >= {("cx", "waiting"), ("cx ⑂ 2", "waiting"), ("asker", "asking"), ("gone", "stale"), ("idle", "not-running")}
    assert next(a for a in document["agents"] if a["label"] == "asker")["needs_you"] is True
    plain = subprocess.run([sys.executable, "-m", "agentlaunch", "fleet"], capture_output=True, text=True, env=env, check=True)
    assert "asker · asking · session s-ask" in plain.stdout and "idle · not running" in plain.stdout


if __name__ == "__main__" and sys.argv[1:2] == ["--write-golden"]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(stable(contract.fleet_json(scene(Path(folder))), Path(folder)), encoding="utf-8")
    print(states.STALE, "golden written:", GOLDEN)
