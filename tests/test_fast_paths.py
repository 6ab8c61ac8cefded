"""The command lines read before Typer is imported, held to click's reading of the same generated command lines.

Three readers stand in for Typer where it costs a person time (each docstring has its figures): ``status --line``/
``--json`` (:func:`agentlaunch.live.status_fast.parse`), the deck's options (:func:`agentlaunch.deck.start.
fast_options`) and which `run` may start its CLI early (:func:`agentlaunch.launch.early.prespawn.read_run`). Each reads
only plain forms and leaves every other command line to Typer: where one gives a reading, click gives the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlaunch.deck.start import fast_options
from agentlaunch.launch.early import prespawn
from agentlaunch.live import status_fast
from agentlaunch.live.tmux import SOCKET_ENV
from tests.support.click_reading import click_reading

WORDS = ["demo", "work", "a=b", "", "-", "-x", "--", "ünï", "s_2"]
ENV = st.sampled_from([None, "", "envsock", "bad name"])


def command_lines(options: Sequence[str]) -> st.SearchStrategy[list[str]]:
    """Command lines of ``options`` (and their ``--name=value`` forms, a few that are not the command's) and words."""
    longs = [o for o in options if o.startswith("--")]
    glued = [f"{o}={w}" for o in longs for w in ("demo", "", "-x")]
    vocabulary = [*options, *glued, *WORDS, "--help", "-h", "--nope", "-Lw", "-qp"]
    return st.lists(st.sampled_from(vocabulary) | st.text(max_size=4), max_size=7)


@contextmanager
def environment(name: str, value: str | None) -> Iterator[None]:
    before = os.environ.get(name)
    os.environ.pop(name, None)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)
        if before is not None:
            os.environ[name] = before


@settings(max_examples=150, deadline=None)
@given(args=command_lines(["--line", "--json", "--socket", "-L", "--watch", "-w", "--interval"]), env=ENV)
def test_status_s_fast_reading_is_click_s(args: list[str], env: str | None) -> None:
    with environment(SOCKET_ENV, env):
        fast = status_fast.parse(args)
        if fast is None:
            return
        params = click_reading(["status", *args])
    assert params is not None, args  # click accepts what the fast path answers
    kind, agent, socket = fast
    assert (params["line"], params["as_json"], params["watch"], params["socket"]) == (
        agent,
        kind == "json",
        False,
        socket,
    ), args


@settings(max_examples=150, deadline=None)
@given(args=command_lines(["-L", "--socket", "--agents-dir"]), env=ENV)
def test_the_deck_s_fast_reading_is_click_s(args: list[str], env: str | None) -> None:
    with environment(SOCKET_ENV, env), environment("AGENTLAUNCH_AGENTS_DIR", None):
        with mock.patch.object(sys.stdin, "isatty", lambda: True), mock.patch.object(sys.stdout, "isatty", lambda: True):
            fast = fast_options(args)
        if fast is None:
            return
        params = click_reading(["deck", *args])
    assert params is not None, args
    socket, agents_dir = fast
    assert (params["socket"], params["agents_dir"]) == (socket, agents_dir), args


RUN_OPTIONS = [
    "-p",
    "--prompt",
    "--agents-dir",
    "--working-dir",
    "-q",
    "--quiet",
    "--timeout",
    "--json",
    "--line",
    "-c",
    "--continue",
    "-r",
    "--resume",
    "--fork",
    "--worktree",
    "--force",
    "--budget-usd",
]


@settings(max_examples=200, deadline=None)
@given(args=command_lines(RUN_OPTIONS))
def test_the_early_start_s_reading_of_run_is_click_s(args: list[str]) -> None:
    fast = prespawn.read_run(["run", *args])
    if fast is None:
        return
    params = click_reading(["run", *args])
    assert params is not None, args
    (agent, agents_dir, working_dir), prompt, flags = fast
    given_prompt = params["prompt"] if params["prompt"] is not None else params["prompt_opt"]
    assert (agent, prompt, agents_dir, working_dir) == (
        params["agent"],
        given_prompt,
        text(params["agents_dir"]),
        text(params["working_dir"]),
    ), args
    assert not (params["continue_last"] or params["resume"] or params["fork"] or params["worktree"]), args  # a new session
    assert flags == {name for name in ("quiet", "as_json", "line") if params[name]}, args
    assert params["prompt"] is None or params["prompt_opt"] is None, args  # never both: the launch refuses that


def text(path: Path | None) -> str | None:
    return None if path is None else str(path)


def test_the_early_start_reads_only_options_run_has_with_their_arity() -> None:
    """Each option :data:`agentlaunch.launch.early.prespawn.EARLY_OPTIONS` names is `run`'s, for the same parameter."""
    import typer.main

    from agentlaunch.cli import load_commands

    run = typer.main.get_command(load_commands(["run"])).commands["run"]  # type: ignore[attr-defined]
    declared = {opt: (p.name, not p.is_flag) for p in run.params if p.param_type_name == "option" for opt in p.opts}
    for option, meaning in prespawn.EARLY_OPTIONS.items():
        assert declared.get(option) == meaning, option


def test_the_plain_forms_of_run_are_read() -> None:
    assert prespawn.read_run(["run", "demo", "hi"]) == (("demo", None, None), "hi", set())
    with_options = ["run", "demo", "-p", "hi", "--agents-dir", "/a", "--json"]
    assert prespawn.read_run(with_options) == (("demo", "/a", None), "hi", {"as_json"})
    assert prespawn.read_run(["run", "--working-dir=/w", "demo", "-"]) == (("demo", None, "/w"), "-", set())
    assert prespawn.read_run(["run", "demo"]) == (("demo", None, None), None, set())  # the CLI's interface
    for other in (
        ["run", "demo", "-c", "hi"],
        ["run", "demo", "--resume=x", "hi"],
        ["run", "demo", "--help"],
        ["run", "demo", "--something-new", "hi"],
        ["run", "demo", "hi", "-p", "again"],
        ["run"],
        ["list"],
    ):
        assert prespawn.read_run(other) is None, other  # the launch decides (and Typer says what is wrong)
