"""The most one model call can cost, and whether calls at that cost can cross a budget: what a budget gate that
cannot read the call asking for a tool in time decides on (issue 41).

Claude Code 2.1.332 starts a tool while the call that asked for it still streams and writes that call's line only
after the tool ran (measured), so its gate cannot always count the call first. The call's true usage is then
bounded: its input is at most the model's context window, its output at most the model's largest output
(:data:`MAX_OUTPUT`), and its price at most the dearest way that input can be billed (uncached, written to the cache
for 5 minutes or an hour, read from it): cost is linear in each kind of token within a price tier, and a tier
depends on the input's size, so the worst is the whole window of one kind (:func:`worst_usages`). The tool runs
when the spend known so far plus that worst, for each call not counted yet, stays under every limit
(:func:`bound_refusal`); otherwise it is refused with the reason. Pure functions: the launch gives the spend and the
pricer (:meth:`agentlaunch.launch.tool_gates.ToolGates.decide`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentlaunch.datarecord import datarecord
from agentlaunch.token_usage import Usage

MAX_OUTPUT: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-6", 128_000),
    ("claude-opus-4-5", 64_000),
    ("claude-opus-4-1", 32_000),
    ("claude-opus-4-0", 32_000),
    ("claude-opus-4-2025", 32_000),
    ("claude-sonnet-4-5", 64_000),
    ("claude-sonnet-4-0", 64_000),
    ("claude-sonnet-4-2025", 64_000),
    ("claude-haiku-4-5", 64_000),
    ("claude-3-5", 8_192),
)
"""The most output tokens one call of a model can return (Anthropic's models overview), by model-id prefix, most
specific first. Claude Code asks for at most this (``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` cannot raise it: the API
refuses a larger ``max_tokens``)."""
ANY_MAX_OUTPUT = 128_000
"""For a model not in :data:`MAX_OUTPUT`: the largest output any model there allows."""


def max_output(model: str | None) -> int:
    """The most output tokens one call of ``model`` can return (:data:`ANY_MAX_OUTPUT` when it is not known)."""
    for prefix, tokens in MAX_OUTPUT:
        if model and model.startswith(prefix):
            return tokens
    return ANY_MAX_OUTPUT


@datarecord(frozen=True)
class WorstCall:
    """One call at its worst: its tokens, its cost (None: no price is known), and what it was bounded for."""

    tokens: int
    usd: float | None
    model: str | None
    window: int | None
    """The context window it was bounded by; None: not known (then nothing bounds the call: :func:`bound_refusal`
    refuses)."""


def worst_usages(window: int, output: int) -> tuple[Usage, ...]:
    """A call with ``window`` tokens of input billed each way it can be (uncached, a 5-minute and a 1-hour cache
    write, a cache read) and ``output`` tokens of output: the dearest of these is the dearest such call."""
    return (
        Usage(input=window, output=output),
        Usage(cache_write=window, output=output),
        Usage(cache_write=window, cache_write_1h=window, output=output),
        Usage(cache_read=window, output=output),
    )


def worst_call(price: Callable[[Usage], float | None], model: str | None, window: int | None) -> WorstCall:
    """The worst of one call of ``model`` with a ``window``-token context, priced with ``price``."""
    output = max_output(model)
    if window is None:
        return WorstCall(output, None, model, None)
    costs = [price(usage) for usage in worst_usages(window, output)]
    known = [c for c in costs if c is not None]
    return WorstCall(window + output, max(known) if len(known) == len(costs) else None, model, window)


def _figure(key: str, value: float) -> str:
    return f"${value:,.2f}" if key.endswith("usd") else f"{int(value):,} tokens"


def bound_refusal(checks: Sequence[tuple[str, float, float, str]], worst: WorstCall, calls: int) -> str | None:
    """None when ``calls`` calls, each at ``worst``, cannot make any limit spent; else why they could.

    ``checks``: each limit's (key, spent so far, limit, label), as the budget guard checks them. A limit is spent
    at ``spent >= limit``: the calls are let go only when ``spent + calls * worst < limit`` for every one. A limit
    on a plan's share (``*_percent``) cannot be bounded (the CLI reports the share only after the call), nor a USD
    limit when no price is known for the model, nor any limit when the context window is not known.
    """
    model = worst.model or "the provider's default model"
    for key, spent, limit, label in checks:
        if key.endswith("percent"):
            return f"{label} cannot be checked before the call reports the plan's share"
        if worst.window is None:
            return f"the context window of {model} is not known, so nothing bounds the call's cost"
        if key.endswith("usd") and worst.usd is None:
            return f"no price is known for {model}, so the call's worst cost is unknown"
        more = calls * ((worst.usd or 0.0) if key.endswith("usd") else worst.tokens)
        if spent + more >= limit:
            what = "that call" if calls == 1 else f"those {calls} calls"
            return (
                f"at its worst {what} could spend {label} ({_figure(key, limit)}): {_figure(key, spent)} spent, "
                f"up to {_figure(key, more)} more"
            )
    return None
