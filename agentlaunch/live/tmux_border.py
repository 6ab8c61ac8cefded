"""The line tmux draws on an agent's pane border: agentlaunch's status line, the cache's countdown, the CLI's title.

``tmux up`` and ``fork`` set it on each agent's window (:data:`BORDER_FORMAT`); tmux computes it at every redraw, so
the countdown needs no writer.
"""

from __future__ import annotations

from agentlaunch.fleet.panes import AGENT_OPTION
from agentlaunch.live.status import CACHE_EXPIRY_OPTION, LINE_OPTION


def _cache_countdown(option: str) -> str:
    """`` · cache warm 4m12s`` / `` · cache cold`` from the pane option holding the cache's expiry (unix seconds),
    computed by tmux at every redraw of the border (``status-interval``): a title is written once per state, so it
    cannot count down itself. ``%s`` is the time now (tmux expands strftime in the border's format first, so
    the modulus is written ``%%``); nothing without the option (no call yet)."""
    left = "#{e|-:#{" + option + "},%s}"

    def div(a: str, b: str) -> str:
        return "#{e|/:" + a + "," + b + "}"

    def mod(a: str, b: str) -> str:
        return "#{e|%%:" + a + "," + b + "}"

    def two(x: str) -> str:  # 5 -> 05
        return "#{?#{e|<:" + x + ",10},0,}" + x

    minutes = div(left, "60") + "m" + two(mod(left, "60")) + "s"
    hours = div(left, "3600") + "h" + two(div(mod(left, "3600"), "60")) + "m"
    warm = "cache warm #{?#{e|<:" + left + ",3600}," + minutes + "," + hours + "}"
    return "#{?#{" + option + "}, · #{?#{e|>:" + left + ",0}," + warm + ",cache cold},}"


CACHE_COUNTDOWN = _cache_countdown(CACHE_EXPIRY_OPTION)
# The line the agent's status writer keeps current, from its pane option (no CLI can set that one), else the pane's
# title (a pane from before the option); and the CLI's own title beside it, dimmed, once the CLI set one (it differs
# from the line, from tmux's default, the host's name, and from the agent's name agentlaunch gave the pane): Codex's
# "[ ! ] Action Required | …", Gemini's "◇  Ready (repo)".
BORDER_LINE = "#{?#{" + LINE_OPTION + "},#{" + LINE_OPTION + "},#{pane_title}}"
_OWN_TITLE = (
    "#{&&:#{!=:#{pane_title},#{" + LINE_OPTION + "}},#{&&:#{!=:#{pane_title},#{host}},"
    "#{!=:#{pane_title},#{" + AGENT_OPTION + "}}}}"
)  # not the line, tmux's default or the name agentlaunch gave
CLI_TITLE = "#{?#{&&:#{" + LINE_OPTION + "}," + _OWN_TITLE + "},#[dim] │ #{pane_title}#[nodim],}"
# What the pane border shows: that line, then the cache's countdown, highlighted when the agent waits for the
# person: "ASKING: needs you" (a permission prompt or question) and "STALLED: needs you" (its turn has heard nothing
# from the CLI for stall_timeout) in red, "waiting" and "done" (your turn) in yellow; then the CLI's title.
BORDER_FORMAT = (
    "#{?#{||:#{m:* · ASKING*," + BORDER_LINE + "},#{m:* · STALLED*," + BORDER_LINE + "}},"
    "#[fg=white#,bg=red#,bold] " + BORDER_LINE + CACHE_COUNTDOWN + " #[default],"
    "#{?#{||:#{m:* · waiting*," + BORDER_LINE + "},#{m:* · done*," + BORDER_LINE + "}},"
    "#[fg=black#,bg=yellow] " + BORDER_LINE + CACHE_COUNTDOWN + " #[default],"
    " " + BORDER_LINE + CACHE_COUNTDOWN + " }}" + CLI_TITLE
)
