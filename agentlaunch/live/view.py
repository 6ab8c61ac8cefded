"""What a person sees: streamed text, one line per tool call, counters, warnings, the footer.

Views are sinks (:class:`agentlaunch.sinks.Sink`) of a launch's events.
Headless: stdout carries the answer only and everything else goes to stderr;
with ``--json`` (``json_lines=True``) stdout carries the events through a
:class:`~agentlaunch.live.jsonlines.JsonLines` sink, and stderr the notices.
A view keeps nothing of what it has shown: a session may print for days.
"""

from __future__ import annotations

import sys
from typing import TextIO

from agentlaunch.events import (
    CallUsage,
    Compaction,
    Event,
    PermissionRequest,
    Text,
    TextDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
    Warning,
)
from agentlaunch.live.jsonlines import JsonLines
from agentlaunch.live.lazy_console import LazyConsole
from agentlaunch.sinks import CompactionWarned, LaunchEvent, LaunchView, Notice, SinkEvent, TurnDone
from agentlaunch.token_usage import Usage
from agentlaunch.usage import pricing
from agentlaunch.usage.meter import CompactionWarning, Meter
from agentlaunch.visible import for_markup, visible


def n(value: int) -> str:
    return f"{value:,}"


def format_cost(meter: Meter) -> str | None:
    """The launch's cost so far, or None when nothing could be priced (never a guessed $0)."""
    return cost_text(meter.cost_usd, meter.priced_calls, meter.unpriced_calls, meter.calls)


def cost_text(cost_usd: float, priced: int, unpriced: int, calls: int) -> str | None:
    """``$0.0123``, ``$0.0123 + 2 unpriced call(s)``, ``unpriced``, or None before any call."""
    if priced == 0:
        return "unpriced" if calls else None
    text = pricing.format_cost(cost_usd)
    if unpriced:
        text += f" + {unpriced} unpriced call(s)"
    return text


def footer(meter: Meter) -> str:
    """The one-line summary: ``tokens in 2,295 · out 287 · cache r 18,074/w 0 · $0.0166``."""
    return usage_footer(meter.total, format_cost(meter))


def usage_footer(t: Usage, cost: str | None) -> str:
    """:func:`footer` of any totals (one sent turn's, say), with its cost already formatted (or None)."""
    parts = [f"tokens in {n(t.input)}", f"out {n(t.output)}", f"cache r {n(t.cache_read)}/w {n(t.cache_write)}"]
    if cost and cost != "unpriced":
        parts.append(cost)
    return " · ".join(parts)


def counters(meter: Meter) -> str:
    """The live counters line of the interactive view."""
    t = meter.total
    window = meter.window
    if window:
        ctx = f"context {n(meter.context)}/{n(window)} ({meter.percent or 0:.1f}%)"
        if meter.window_source == "observed":
            ctx = f"context {n(meter.context)} (window unknown)"
    else:
        ctx = f"context {n(meter.context)}"
    parts = [ctx]
    left = meter.to_compaction
    if left is not None and meter.compaction_known:
        parts.append(f"{n(max(left, 0))} to compaction" if left > 0 else "past the compaction threshold")
    parts += [f"in {n(t.input)}", f"cache w {n(t.cache_write)}", f"cache r {n(t.cache_read)}", f"out {n(t.output)}"]
    cost = format_cost(meter)
    if cost:
        parts.append(cost)
    if meter.rate_limits is not None:
        from datetime import UTC, datetime

        from agentlaunch.usage.plan_limits import as_record, limits_text

        if limits := limits_text({"rate_limits": as_record(meter.rate_limits)}, datetime.now(UTC)):
            parts.append(limits)
    if meter.cache is not None:
        parts.append(f"cache warm until {meter.cache.expires_at.astimezone():%H:%M:%S}")
    return " · ".join(parts)


def compaction_warning(w: CompactionWarning) -> str:
    """The warning once a call's context reached the threshold: the CLI compacts from there, not at the window's end."""
    return (
        f"context {n(w.context)} of {n(w.window)} passed the compaction threshold {n(w.threshold)} "
        f"by {n(w.past)}: the CLI may compact the conversation at any call"
    )


class HeadlessView:
    """One-turn output for scripts: the answer on stdout, a footer on stderr."""

    def __init__(
        self,
        meter: Meter,
        *,
        json_lines: bool = False,
        quiet: bool = False,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.meter = meter
        self.json_lines = json_lines
        self.quiet = quiet
        self.out = stdout or sys.stdout
        self.err = LazyConsole(file=stderr or sys.stderr, highlight=False, soft_wrap=True)
        self._ends_with_newline = True
        self._streamed = False
        self._json = JsonLines(self.out) if json_lines else None  # --json: stdout is the events, as JSON lines

    def event(self, event: SinkEvent, launch: LaunchView | None = None) -> None:
        if isinstance(event, LaunchEvent):
            self._launch_event(event)
        elif isinstance(event, Unknown):
            self.unknown_once(event)  # the launch passes on the first of each type only
        elif self._json is not None:
            self._json.event(event)
        else:
            self._show(event)

    def _launch_event(self, event: LaunchEvent) -> None:
        if isinstance(event, Notice):
            self.notice(event.message)
        elif isinstance(event, CompactionWarned):
            self.warn_compaction(event.warning)
        elif isinstance(event, TurnDone):
            self.turn_done()

    def _show(self, event: Event) -> None:
        # What the provider sent is shown, never obeyed: escapes written out, no rich markup taken from it.
        if isinstance(event, TextDelta):
            self._write(visible(event.text, keep_newlines=True))
            self._streamed = True
        elif isinstance(event, Text):
            if not self._streamed:
                self._write(visible(event.text, keep_newlines=True))
        elif isinstance(event, ToolUse):
            self._newline()
            self.err.print(f"[dim]⚙ {for_markup(event.name)} {for_markup(event.summary)}[/]", markup=True, highlight=False)
        elif isinstance(event, ToolResult) and event.is_error:
            self.err.print(f"[dim]  ✗ {for_markup(event.summary)}[/]", markup=True, highlight=False)
        elif isinstance(event, Warning):
            self.err.print(f"[yellow]warning:[/] {for_markup(event.message)}", markup=True, highlight=False)
        elif isinstance(event, Compaction):
            self.err.print(f"[yellow]compacted:[/] {self._compaction(event)}", markup=True, highlight=False)
        elif isinstance(event, TurnEnd):
            self._streamed = False

    def notice(self, message: str) -> None:
        self.err.print(f"[dim]{for_markup(message)}[/]", markup=True, highlight=False)

    def warn_compaction(self, warning: CompactionWarning) -> None:
        self.err.print(f"[bold yellow]⚠ {compaction_warning(warning)}[/]", markup=True, highlight=False)

    def unknown_once(self, event: Unknown) -> None:
        shown = for_markup(repr(event.type))
        self.err.print(f"[dim]note: ignoring provider event type {shown} (shown once)[/]", markup=True, highlight=False)

    def turn_done(self) -> None:
        if self.json_lines:
            return
        self._newline()
        if not self.quiet:
            self.err.print(footer(self.meter), highlight=False)

    def _compaction(self, event: Compaction) -> str:
        pre = n(event.pre_tokens) if event.pre_tokens is not None else "?"
        post = n(event.post_tokens) if event.post_tokens is not None else "?"
        return f"the CLI compacted the context ({for_markup(event.trigger or 'auto')}): {pre} → {post} tokens"

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        self._ends_with_newline = text.endswith("\n")

    def _newline(self) -> None:
        if not self._ends_with_newline:
            self._write("\n")


class InteractiveView(HeadlessView):
    """The chat view: like the headless one, plus the counters line after every model call.

    A call's line is shown when the turn goes on after it (a tool result, a
    permission question, more text), and at the turn's end, when the CLI's
    final report (the context window, say) is in.
    """

    _call_since_counters = False

    def event(self, event: SinkEvent, launch: LaunchView | None = None) -> None:
        if self._call_since_counters and isinstance(event, ToolResult | PermissionRequest | TextDelta | Text):
            self.show_counters()
        super().event(event, launch)
        if isinstance(event, CallUsage):
            self._call_since_counters = True

    def show_counters(self) -> None:
        self._call_since_counters = False
        self._newline()
        self.err.print(f"[dim]{counters(self.meter)}[/]", markup=True, highlight=False)

    def turn_done(self) -> None:
        self._newline()
        self.show_counters()
