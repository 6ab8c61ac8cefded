"""OSC 7501 between the CLI and the terminal: the probe answered, the reports read and taken out, malformed ones
dropped (agentlaunch/launch/native/program_status.py), and each report merged with the other sources' states
(agentlaunch/launch/native/cli_report.py). The sequences are the ones measured on Claude Code 2.1.332 and Codex
0.171.0 (docs/status-and-tmux.md)."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlaunch.launch.native.cli_report import INTERRUPTED, CliReports, merge, outer_report, reason_of
from agentlaunch.launch.native.interrupt_watch import RETRY_INTERRUPTED
from agentlaunch.launch.native.native import NativeRun
from agentlaunch.launch.native.program_status import (
    KINDS,
    MAX_SEQUENCE,
    MAX_TEXT,
    PREFIX,
    PROBE,
    PROBE_REPLY,
    STATES,
    ProgramStatus,
    Report,
    encode,
    parse_report,
)
from agentlaunch.launch.session_state import SessionState
from agentlaunch.live.status import pane_state

CLAUDE_PROBE = b"\x1b]7501;?\x07\x1b[c"  # as Claude Code 2.1.332 writes it: the probe, then DA1 (its fence)
CLAUDE_BLOCKED = b"\x1b]7501;state=blocked:app=claude-code:msg=ZGlhbG9nIG9wZW4=\x07"
CODEX_DONE = b"\x1b]7501;state=done:app=codex\x1b\\"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Seen:
    def __init__(self) -> None:
        self.reports: list[Report] = []
        self.answers: list[bytes] = []
        self.status = ProgramStatus(self.reports.append)
        self.status.answer_cli = self.answers.append


def test_claudes_probe_is_answered_and_taken_out_and_its_report_read() -> None:
    seen = Seen()
    assert seen.status.output(b"frame" + CLAUDE_PROBE) == b"frame\x1b[c"
    assert seen.answers == [PROBE_REPLY] and seen.status.probed
    assert seen.status.output(b"a" + CLAUDE_BLOCKED + b"b") == b"ab"
    assert seen.reports == [Report("blocked", app="claude-code", msg="dialog open")]


def test_codexs_report_ended_by_st_is_read() -> None:
    seen = Seen()
    assert seen.status.output(b"x" + CODEX_DONE + b"\x1b[2J") == b"x\x1b[2J"
    assert seen.reports == [Report("done", app="codex")] and seen.answers == []


def test_a_report_split_at_every_byte_gives_the_same_output_and_report() -> None:
    stream = b"\x1b[1mhi\x1b[0m" + CLAUDE_BLOCKED + b"tail" + CODEX_DONE + b"\x1b[H"
    for cut in range(len(stream) + 1):
        seen = Seen()
        out = seen.status.output(stream[:cut]) + seen.status.output(stream[cut:])
        assert out == b"\x1b[1mhi\x1b[0mtail\x1b[H", cut
        assert [r.state for r in seen.reports] == ["blocked", "done"], cut


def test_an_unterminated_or_huge_sequence_is_dropped_and_what_follows_it_passes() -> None:
    seen = Seen()
    huge = PREFIX + b"state=idle:app=x:msg=" + b"A" * (MAX_SEQUENCE * 3)
    out = b"".join(seen.status.output(huge[i : i + 1000]) for i in range(0, len(huge), 1000))
    assert out == b""  # held, then dropped: never passed on half
    assert seen.status.output(b"A" * 50 + b"\x07after") == b"after"
    assert seen.reports == []
    # Cut short by another escape: dropped, and that escape passes.
    assert seen.status.output(PREFIX + b"state=idle\x1b[2Jx") == b"\x1b[2Jx" and seen.reports == []
    # CAN and SUB end a sequence without it counting.
    assert seen.status.output(PREFIX + b"state=idle\x18y") == b"y" and seen.reports == []


def test_bad_fields_are_dropped_and_another_ids_report_is_ignored() -> None:
    assert parse_report(b"state=blocked:app=c:msg=!!notbase64") == Report("blocked", app="c")
    assert parse_report(b"state=idle:app=c:id=sub-1") is None  # a child's (a subagent), never the agent's
    assert parse_report(b"state=sleeping:app=c") is None
    assert parse_report(b"app=c") is None
    assert parse_report("state=idle:app=é".encode()) is None
    assert parse_report(b"state=blocked:kind=root:progress=999") == Report("blocked", kind=None, progress=100)
    assert parse_report(b"state=blocked:progress=-5") == Report("blocked") == parse_report(b"state=blocked:progress=1e9")
    assert parse_report(b"state=working:progress=250") == Report("working", progress=100)
    forged = parse_report(f"state=blocked:kind=auth:msg={b64(chr(27) + '[31mred' + chr(7) + 'x' * 1000)}".encode())
    assert forged is not None and forged.kind == "auth" and forged.msg is not None
    assert "\x1b" not in forged.msg and "\x07" not in forged.msg and len(forged.msg) == MAX_TEXT
    # The form (fields split by ";") is read too; the first of two equal keys counts.
    assert parse_report(b"state=idle;app=x;state=working") == Report("idle", app="x")


def test_the_outer_terminals_answer_is_taken_out_of_the_keys_and_a_lone_esc_is_never_held() -> None:
    seen = Seen()
    assert seen.status.keys(b"\x1b") == b"\x1b" and not seen.status.outer_answered
    assert seen.status.keys(b"ab" + PREFIX + b"?\x1b\\" + b"c") == b"abc" and seen.status.outer_answered
    assert seen.status.ask_outer and not ProgramStatus(seen.reports.append, "linux").ask_outer  # it would print it


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.lists(st.integers(min_value=0, max_value=3000), max_size=6))
def test_any_bytes_in_any_pieces_never_raise_and_bytes_with_no_osc_7501_pass_whole(data: bytes, cuts: list[int]) -> None:
    seen = Seen()
    points = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    out = b"".join(seen.status.output(data[a:b]) for a, b in zip(points, points[1:], strict=False))
    assert len(out) <= len(data)
    if PREFIX[:2] not in data and not data.endswith(b"\x1b"):
        assert out == data and seen.reports == []


reports = st.builds(
    Report,
    state=st.sampled_from(sorted(STATES)),
    app=st.just("agentlaunch"),
    kind=st.none() | st.sampled_from(sorted(KINDS)),
    progress=st.none() | st.integers(min_value=0, max_value=100),
    title=st.none() | st.text(st.characters(categories=("L", "N")), min_size=1, max_size=40),
    msg=st.none() | st.text(st.characters(categories=("L", "N"), include_characters=" "), min_size=1, max_size=40),
)


@settings(max_examples=200, deadline=None)
@given(reports)
def test_what_agentlaunch_passes_on_reads_back_as_the_cli_would_say_it(report: Report) -> None:
    data = encode(report)
    assert data.startswith(PREFIX) and data.endswith(b"\x07")
    back = parse_report(data[len(PREFIX) : -1])
    assert back is not None and back.state == report.state
    assert back.kind == (report.kind if report.state == "blocked" else None)
    assert back.msg == report.msg and back.title == report.title


# -- the merge ---------------------------------------------------------------------------------


def test_idle_or_done_ends_retrying_stalled_and_asking_and_says_they_disagreed() -> None:
    for state in ("retrying", "thinking", "tool", "asking", "stalled"):
        merged = merge(Report("idle"), state)
        assert merged.state == "waiting" and merged.disagrees, state
    assert merge(Report("done"), "starting").state == "waiting" and not merge(Report("done"), "starting").disagrees
    assert merge(Report("idle"), "waiting").state is None
    assert merge(Report("idle"), "thinking").reason == INTERRUPTED
    assert merge(Report("done"), "stalled").state == "waiting" and merge(Report("done"), "stalled").reason is None
    assert merge(Report("idle"), "retrying").reason == RETRY_INTERRUPTED and merge(Report("idle"), "starting").reason is None


def test_done_in_a_turn_waits_for_the_source_that_follows_it_and_idle_for_the_app_server() -> None:
    for state in ("thinking", "tool", "retrying"):
        for source in ("hooks", "transcript", "app-server", "cli", None):
            merged = merge(Report("done"), state, source)
            assert merged.state is None and merged.wait, (state, source)
            waited = merge(Report("done"), state, source, waited=True)
            assert (waited.state, waited.reason, waited.wait) == ("waiting", None, False)
        assert merge(Report("idle"), state, "app-server").wait  # the interface tells the app-server's turn late
        assert merge(Report("idle"), state, "hooks").state == "waiting"  # Esc: no hook tells it
    assert merge(Report("idle"), "thinking", "app-server", waited=True).reason == INTERRUPTED


def test_blocked_asks_with_the_kind_and_message_and_keeps_a_hooks_question() -> None:
    assert merge(Report("blocked", kind="auth", msg="Not signed in"), "thinking").state == "asking"
    assert merge(Report("blocked", kind="auth", msg="Not signed in"), "thinking").reason == "login: Not signed in"
    assert merge(Report("blocked", msg="dialog open"), "waiting").reason == "dialog open"
    for source in ("hooks", "app-server", "transcript"):
        assert merge(Report("blocked", kind="permission"), "asking", source).state is None
        assert not merge(Report("blocked", kind="permission"), "asking", source).wait
    waits = merge(Report("blocked", kind="permission", msg="approve Bash: ls"), "tool", "hooks")
    assert waits.state is None and waits.wait  # a hook may name it yet
    waited = merge(Report("blocked", kind="permission", msg="approve Bash: ls"), "tool", "hooks", waited=True)
    assert (waited.state, waited.reason) == ("asking", "permission: approve Bash: ls")
    assert merge(Report("blocked", kind="question"), "asking", "agentlaunch", waited=True).reason == "question"


def test_working_starts_a_turn_only_from_idle_states_and_error_is_the_rows_reason() -> None:
    assert merge(Report("working"), "waiting").state == "thinking"
    assert merge(Report("working"), "waiting", "hooks").state == "thinking"  # the hooks' prompt comes after it
    assert merge(Report("working"), "waiting", "app-server").state is None  # the turn the app-server just ended
    assert merge(Report("working"), "stalled").state == "thinking"
    assert merge(Report("working"), "starting").state is None  # Codex says working, then idle, as it starts
    assert merge(Report("working"), "tool").state is None and merge(Report("working"), "retrying").state is None
    assert merge(Report("working"), "asking", "cli").state == "thinking"  # a dialog only the CLI reported, answered
    assert merge(Report("working"), "asking", "hooks").state is None  # a question a hook named stays open
    error = merge(Report("error", msg="token expired"), "waiting")
    assert (error.state, error.reason) == ("waiting", "error: token expired")
    assert reason_of(Report("error")) == "error"


def test_agentlaunchs_own_states_and_clear_are_left_alone() -> None:
    for report in (Report("idle"), Report("working"), Report("blocked"), Report("error", msg="x"), Report("clear")):
        assert merge(report, "paused").state is None and merge(report, "exited").state is None
    assert merge(Report("clear"), "thinking").state is None


def never(delay: float, then: object) -> object:
    raise AssertionError(f"no report here waits ({delay}s)")


class FakeLaunch:
    def __init__(self, state: str, source: str | None) -> None:
        self.state, self.state_reason = state, None
        self.session_state = SessionState("s1", False, 0, {}, None)
        self.session_state.state_source = source
        self.set: list[tuple[str, str | None, str]] = []
        self.refreshed = 0

    def run_state(self, state: str, reason: str | None, source: str) -> None:  # NativeRun._state
        self.set.append((state, reason, source))
        self.state, self.state_reason, self.session_state.state_source = state, reason, source

    def set_state(self, state: str, *, always: bool = False, reason: str | None = None, source: str = "agentlaunch") -> None:
        assert (state, reason, source, always) == (self.state, self.state_reason, self.session_state.state_source, True)
        self.refreshed += 1


def test_a_report_sets_the_state_as_the_cli_and_the_disagreement_names_the_other_source() -> None:
    launch = FakeLaunch("retrying", "transcript")
    reports = CliReports(launch, launch.run_state, never)
    reports.on_report(Report("idle", app="claude-code"))
    assert launch.set == [("waiting", RETRY_INTERRUPTED, "cli")]  # idle, not done: Esc ended the turn
    kept = launch.session_state
    assert kept.cli_report is not None and kept.cli_report["state"] == "idle"
    assert kept.disagreement is not None
    assert (kept.disagreement["cli"], kept.disagreement["state"], kept.disagreement["source"]) == (
        "idle",
        "retrying",
        "transcript",
    )
    kept.disagreement = None
    launch.state, kept.state_source = "thinking", "cli"
    reports.on_report(Report("idle"))
    assert kept.disagreement is None  # the CLI's own earlier word: no disagreement with itself
    reports.on_report(Report("done"))  # no new state: the record is written again, the report its news
    assert launch.refreshed == 1 and kept.cli_report is not None and kept.cli_report["state"] == "done"
    assert kept.state_source == "cli"


def test_the_merged_state_goes_to_the_outer_terminal_only_once_it_answered_the_probe() -> None:
    launch = FakeLaunch("waiting", "hooks")
    shown: list[bytes] = []
    reports = CliReports(launch, launch.run_state, never)
    reports.inject = shown.append
    reports.passed_on()
    assert shown == []  # it did not answer: no escape sent to it
    assert reports.status.keys(PROBE.replace(b"\x07", b"\x1b\\")) == b""
    reports.passed_on()
    reports.passed_on()  # the same report again is not sent twice
    assert shown == [encode(Report("idle"))]
    launch.state = "asking"
    reports.last = Report("blocked", kind="permission", msg="Bash: ls")
    reports.passed_on()
    assert shown[-1] == encode(Report("blocked", kind="permission", msg="Bash: ls"))
    assert outer_report("tool", None) == Report("working") and outer_report("exited", None) == Report("clear")


def test_the_panes_option_holds_the_merged_report_in_fixed_words_only() -> None:
    record = {"state": "asking", "state_source": "cli", "cli_report": {"state": "blocked", "kind": "auth", "msg": "x"}}
    assert pane_state(record) == "state=asking:source=cli:cli=blocked:kind=auth"
    assert pane_state({"state": "waiting", "state_source": "hooks", "cli_report": None}) == "state=waiting:source=hooks"
    forged = {"state": "asking;kill-server", "state_source": "#(rm -rf ~)", "cli_report": {"state": ["x"], "kind": 5}}
    assert pane_state(forged) == ""


class RunLaunch:
    """What NativeRun touches of a launch, its state kept as the launch keeps it (SessionState.change_state)."""

    stopped = None
    paused = None

    def __init__(self) -> None:
        self.session_state = SessionState("s1", False, 0, {}, None)
        self.told: list[tuple[str, str | None, str]] = []

    @property
    def state(self) -> str:
        return self.session_state.state

    @property
    def state_reason(self) -> str | None:
        return self.session_state.state_reason

    def set_state(self, state: str, *, always: bool = False, reason: str | None = None, source: str = "agentlaunch") -> None:
        if self.session_state.change_state(state, reason, always=always, source=source):
            self.told.append((state, reason, source))

    def handle(self, event: object) -> None:
        pass

    def emit(self, event: object) -> None:
        pass

    class liveness:  # noqa: N801 - the launch's attribute of that name
        @staticmethod
        def progress() -> None:
            pass


def test_a_dialog_the_cli_reports_outside_a_turn_asks_but_opens_no_turn() -> None:
    launch = RunLaunch()
    run = NativeRun(launch)  # type: ignore[arg-type]
    run.reports.on_report(Report("blocked", app="claude-code", msg="dialog open"))  # its trust dialog, say
    assert launch.told[-1] == ("asking", "dialog open", "cli") and not run.in_turn
    run.reports.on_report(Report("idle", app="claude-code"))
    assert launch.state == "waiting" and launch.session_state.turns == 0
