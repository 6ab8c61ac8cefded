"""Sessions people can recognise: a title (the first prompt), turns, cost, last use; a unique id prefix names one."""

from __future__ import annotations

import json
from pathlib import Path

from agentlaunch import paths
from agentlaunch.usage.store import Store, shorten
from tests.support.cli_runs import run_cli_inprocess

PRICED = {"AGENTLAUNCH_PRICE_INPUT": "3", "AGENTLAUNCH_PRICE_OUTPUT": "15"}


def run(agents_dir: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    done = run_cli_inprocess("run", "demo", *args, "--agents-dir", str(agents_dir), env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def listed() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = json.loads(run_cli_inprocess("sessions", "--json").stdout)
    return rows


def test_sessions_show_the_first_prompt_as_title_with_turns_cost_and_last_use(agents_dir: Path) -> None:
    run(agents_dir, "Review the login form\nand say what breaks", env=PRICED)
    (row,) = listed()
    run(agents_dir, "-r", str(row["session_id"]), "a second, different prompt", env=PRICED)
    (row,) = listed()
    assert row["title"] == "Review the login form and say what breaks"  # the first prompt, on one line, no startup text
    assert row["turns"] == 2 and row["calls"] == 2
    assert isinstance(row["cost_usd"], float) and row["cost_usd"] > 0
    table = run_cli_inprocess("sessions", "--limit", "5").stdout.decode()
    assert "Review the login form" in table and "title" in table and "cost" in table and "$" in table


def test_an_unpriced_session_says_so_and_a_long_prompt_is_shortened(agents_dir: Path) -> None:
    long = "word " * 40
    run(agents_dir, long)
    (row,) = listed()
    assert row["cost_usd"] is None and row["calls"] == 1
    assert row["title"] == shorten(long) and len(str(row["title"])) == 60 and str(row["title"]).endswith("…")
    assert "unpriced" in run_cli_inprocess("sessions").stdout.decode()


def test_a_unique_prefix_resumes_and_reports_and_an_ambiguous_one_lists_the_matches(agents_dir: Path) -> None:
    run(agents_dir, "first")
    (row,) = listed()
    full = str(row["session_id"])
    again = run_cli_inprocess("run", "demo", "-r", full[:8], "next", "--agents-dir", str(agents_dir))
    assert again.returncode == 0, again.stderr
    assert [r["session_id"] for r in listed()] == [full] and listed()[0]["turns"] == 2
    usage = run_cli_inprocess("usage", "--session", full[:4], "--calls", "--json")
    assert usage.returncode == 0, usage.stderr
    assert [c["turn"] for c in json.loads(usage.stdout)] == [1, 2]  # both calls of the session the prefix names
    by_session = json.loads(run_cli_inprocess("usage", "--by", "session", "--session", full[:6], "--json").stdout)
    assert [r["session"] for r in by_session] == [full]

    with Store.open(paths.store_path()) as store:
        for sid in ("abc12-one", "abc12-two"):
            store.start_session(sid, agent="demo", provider="fake", working_dir="/w")
        store.set_title("abc12-two", "the second one")
    for args in (["run", "demo", "-r", "abc1", "hi", "--agents-dir", str(agents_dir)], ["usage", "--session", "abc"]):
        done = run_cli_inprocess(*args)
        err = done.stderr.decode()
        assert done.returncode == 2, err
        assert "'abc1' is the start of several sessions" in err or "'abc' is the start of several sessions" in err
        assert "abc12-one" in err and "abc12-two" in err and "the second one" in err
    # An exact id wins over being another's prefix.
    with Store.open(paths.store_path()) as store:
        store.start_session("abc12", agent="demo", provider="fake", working_dir="/w")
    assert run_cli_inprocess("usage", "--session", "abc12").returncode == 0


def test_a_prefix_that_matches_nothing_is_left_to_the_cli(agents_dir: Path) -> None:
    # As before: an id agentlaunch never saw goes to the CLI as it is, which may know it (the fake one does not).
    done = run_cli_inprocess("run", "demo", "-r", "zzzz-unknown", "hi", "--agents-dir", str(agents_dir))
    assert done.returncode == 1 and b"No conversation found with session ID: zzzz-unknown" in done.stderr
    usage = run_cli_inprocess("usage", "--session", "nothing-like-it", "--calls")
    assert usage.returncode == 2 and b"no session 'nothing-like-it'" in usage.stderr
