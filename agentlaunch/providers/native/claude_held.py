"""Claude Code's held hooks as its source reads them: a held request as a report, and how long a held tool waits for
the line of the call that asked for it (:mod:`agentlaunch.providers.native.claude_source` decides; the socket is
:mod:`agentlaunch.providers.native.hook_held`)."""

from __future__ import annotations

import contextlib

from agentlaunch.providers import untrusted
from agentlaunch.providers.native.hook_held import HeldHook
from agentlaunch.providers.native.hook_socket import HookReport

GATE_READ_WAIT = 10.0
"""Seconds a held tool the bound does not allow at once waits for the line of the call that asked for it; past it the
tool is decided on the bound again (:data:`UNDECIDED`).

Measured on 2.1.332 (issue 41; 30 runs of test_budget_pause_e2e's tmux case at 10 in parallel on a loaded machine,
each gate logged): the line came 0-0.31 s after the hook in 27, and never in 3. There Claude Code had started the
tool while its call still streamed (its streaming tool executor) and wrote the call's line only after the tool was
done, with its result: waiting longer cannot help, and answering without that call counted let a call that crossed
the budget run its tool (the third model request the test saw). So a tool whose call is not read is decided on a
bound (:mod:`agentlaunch.usage.call_bound`): as soon as it is held, it runs when the calls not counted cannot cross
any limit even at their worst; otherwise it waits for the line, and is refused once the wait is over if the bound
still does not allow it, the reason on the agent's row."""
UNDECIDED = (
    "agentlaunch refused a tool: the budget could not be checked in time (the call that asked for it was not in "
    "Claude Code's transcript yet)"
)
GATE_REREAD = 0.05
"""While a tool waits for that line, the transcript is read again this often (it wakes nothing when it grows)."""


def held_report(hook: HeldHook) -> HookReport:
    """A held hook's request as a report: its JSON object (or {}), truncated when its body was too large to keep."""
    payload: object = None
    if hook.body:
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            payload = untrusted.loads(hook.body.decode("utf-8"))
    return HookReport(hook.event, payload if isinstance(payload, dict) else {}, hook.body is None, hook.reply)
