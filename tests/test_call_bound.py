"""The bound a budget gate decides on when the call asking for a tool is not read in time (issue 41): one call at
its worst never costs less than the true call can, and calls it lets go never make a limit spent."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentlaunch.token_usage import Usage
from agentlaunch.usage.call_bound import ANY_MAX_OUTPUT, WorstCall, bound_refusal, max_output, worst_call
from agentlaunch.usage.overrides import Rates

SONNET = Rates(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75, cache_write_1h=6.0)


def tiered(rates: Rates, over: int, factor: float):  # type: ignore[no-untyped-def]
    """Prices as Anthropic's long context does: every token dearer once the input passes ``over``."""

    def price(usage: Usage) -> float:
        cost = rates.cost(usage)
        return cost * factor if usage.total_input > over else cost

    return price


def test_one_sonnet_call_at_its_worst_is_its_window_written_to_the_cache_for_an_hour_and_its_whole_output() -> None:
    worst = worst_call(SONNET.cost, "claude-sonnet-4-5", 200_000)
    assert worst.tokens == 264_000
    assert worst.usd is not None and abs(worst.usd - (200_000 * 6.0 + 64_000 * 15.0) / 1e6) < 1e-9  # $2.16


def test_far_from_the_limit_the_bound_allows_and_near_it_says_which_limit() -> None:
    worst = worst_call(SONNET.cost, "claude-sonnet-4-5", 200_000)
    label = "the session budget of agent 'spender'"
    assert bound_refusal([("session_usd", 0.01, 5.0, label)], worst, 1) is None
    why = bound_refusal([("session_usd", 0.01, 1.0, label)], worst, 1)
    assert why == f"at its worst that call could spend {label} ($1.00): $0.01 spent, up to $2.16 more"
    assert bound_refusal([("session_usd", 0.01, 5.0, label)], worst, 3) is not None  # three calls unread: $6.48
    tokens = bound_refusal([("session_tokens", 1_000, 250_000, "the session token budget")], worst, 1)
    assert tokens is not None and "264,000 tokens more" in tokens
    assert bound_refusal([("session_tokens", 1_000, 300_000, "the session token budget")], worst, 1) is None


def test_no_price_no_window_or_a_plan_share_refuses_and_says_why() -> None:
    unpriced = worst_call(lambda usage: None, "claude-mystery", 200_000)
    assert unpriced.usd is None
    why = bound_refusal([("session_usd", 0.0, 100.0, "the session budget")], unpriced, 1)
    assert why == "no price is known for claude-mystery, so the call's worst cost is unknown"
    assert bound_refusal([("session_tokens", 0.0, 10**9, "the session token budget")], unpriced, 1) is None
    windowless = worst_call(SONNET.cost, None, None)
    why = bound_refusal([("session_tokens", 0.0, 10**9, "t")], windowless, 1)
    assert why == "the context window of the provider's default model is not known, so nothing bounds the call's cost"
    why = bound_refusal([("five_hour_percent", 1.0, 90.0, "the 5-hour plan-limit budget")], unpriced, 1)
    assert why == "the 5-hour plan-limit budget cannot be checked before the call reports the plan's share"
    assert bound_refusal([], unpriced, 1) is None  # no limit at all (a confirmed turn): nothing to cross


def test_an_unknown_model_is_bounded_by_the_largest_output_any_model_allows() -> None:
    assert max_output("claude-opus-4-1-20250805") == 32_000 and max_output("claude-sonnet-4-5") == 64_000
    assert max_output("claude-opus-4-7") == max_output("sonnet") == max_output(None) == ANY_MAX_OUTPUT


rates = st.builds(
    Rates,
    input=st.floats(0, 100),
    output=st.floats(0, 200),
    cache_read=st.floats(0, 100),
    cache_write=st.floats(0, 100),
    cache_write_1h=st.floats(0, 100),
)


@given(
    rates=rates,
    factor=st.floats(1, 3),
    window=st.integers(1, 2_000_000),
    model=st.sampled_from(["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "claude-new", None]),
    shares=st.tuples(*[st.floats(0, 1)] * 4),
    fill=st.floats(0, 1),
    out=st.floats(0, 1),
    spent=st.floats(0, 50),
    limit=st.floats(0.01, 60),
    calls=st.integers(1, 4),
)
def test_a_call_the_bound_lets_go_never_makes_the_limit_spent(  # type: ignore[no-untyped-def]
    rates, factor, window, model, shares, fill, out, spent, limit, calls
) -> None:
    """Any true call (its input within the window, split any way among the kinds; its output within the model's
    largest), any prices (long context dearer past half the window): the worst is at least its cost, and when the
    bound allows, the spend with ``calls`` such calls stays under the limit."""
    price = tiered(rates, window // 2, factor)
    worst = worst_call(price, model, window)
    total = sum(shares) or 1.0
    tokens = int(window * fill)
    parts = [int(tokens * s / total) for s in shares]
    write = parts[1] + parts[2]
    true = Usage(
        input=parts[0], cache_write=write, cache_write_1h=parts[2], cache_read=parts[3], output=int(max_output(model) * out)
    )
    assert true.total_input <= window
    assert worst.usd is not None and price(true) <= worst.usd * (1 + 1e-9) + 1e-12
    assert true.total_input + true.output <= worst.tokens
    if bound_refusal([("session_usd", spent, limit, "l")], worst, calls) is None:
        assert spent + calls * price(true) < limit
    if bound_refusal([("daily_tokens", spent * 10_000, limit * 10_000, "l")], worst, calls) is None:
        assert spent * 10_000 + calls * (true.total_input + true.output) < limit * 10_000


def test_a_worst_call_is_a_record_of_what_it_was_bounded_by() -> None:
    assert worst_call(SONNET.cost, "claude-sonnet-4-5", 1000) == WorstCall(
        65_000, (1000 * 6.0 + 64_000 * 15.0) / 1e6, "claude-sonnet-4-5", 1000
    )
