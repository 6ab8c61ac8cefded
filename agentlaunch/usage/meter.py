"""Live counters: tokens by kind, context in use, distance to compaction.

The meter keeps totals and the latest call only; it never holds the
transcript, so memory stays flat however long a session runs.
"""

from __future__ import annotations

from agentlaunch.datarecord import datarecord, field, replace
from agentlaunch.events import CacheTtl, CallUsage, Compaction, ContextWindow, Event, OutputFinal, RateLimits
from agentlaunch.providers.descriptors import DESCRIPTORS
from agentlaunch.token_usage import Usage
from agentlaunch.usage.cache_lifetime import CacheWarmth

DEFAULT_BUFFER = 33_000


def table_window(model: str | None) -> int | None:
    """The context window the provider descriptors know for ``model`` (by model-id prefix), or None.

    Used when neither agent.yaml nor the CLI says. The model ids of different
    providers do not share prefixes, so every descriptor's table is asked.
    """
    for descriptor in DESCRIPTORS.values():
        if (window := descriptor.known_window(model)) is not None:
            return window
    return None


@datarecord(frozen=True)
class CompactionWarning:
    """Context crossed the compaction threshold (shown once per crossing)."""

    context: int
    threshold: int
    window: int

    @property
    def left(self) -> int:
        """Tokens the window still holds (not what is left before compaction: past the threshold that is none)."""
        return max(self.window - self.context, 0)

    @property
    def past(self) -> int:
        """How far the context is past the compaction threshold."""
        return max(self.context - self.threshold, 0)


@datarecord(frozen=True)
class Earlier:
    """What a resumed session's earlier launches used and cost (read from the usage store).

    Kept apart from the launch's own counts: a turn's footer is this launch's, while the status
    record (``status``, ``--line``, ``--json``, the pane border) shows the whole session.
    """

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    priced_calls: int = 0
    unpriced_calls: int = 0


class Meter:
    """Counts one session's usage from normalized events."""

    def __init__(
        self,
        *,
        configured_window: int | None = None,
        buffer: int = DEFAULT_BUFFER,
        model: str | None = None,
        compaction_at: int | None = None,
    ) -> None:
        self.configured_window = configured_window
        self.compaction_at = compaction_at
        """agent.yaml's ``compaction_at``: where the CLI was told to compact (None: the window less the buffer)."""
        self.reported_window: int | None = None
        self.model = model
        self.buffer = buffer
        self.total = Usage()
        self.last: Usage | None = None
        self.calls = 0
        self.largest_context = 0
        self.warned = False
        self._last_call_id: str | None = None
        self.cost_usd = 0.0
        self.priced_calls = 0
        self.unpriced_calls = 0
        self.cache: CacheWarmth | None = None
        """The provider's cache after the latest call (set by the launch, which can price it)."""
        self.earlier = Earlier()
        """A resumed session's calls before this launch (see :meth:`resume`)."""
        self.rate_limits: RateLimits | None = None
        """The plan's limits as the CLI last reported them (a subscription's; None with an API key)."""
        self.cache_ttl: int | None = None
        """The cache lifetime (seconds) the CLI says it asks for; None: it did not say."""

    def resume(self, last: Usage, model: str | None, earlier: Earlier) -> None:
        """Start from a resumed session's stored calls: its context is the last call's, its counts go to :attr:`earlier`."""
        self.last = last
        self.largest_context = max(self.largest_context, last.context)
        self.model = self.model or model
        self.earlier = earlier
        self.warned = self.compaction_known and self.threshold is not None and self.context >= self.threshold

    def add_cost(self, cost: float | None) -> None:
        """Account for the price of one call (None: it could not be priced)."""
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += cost
            self.priced_calls += 1

    @property
    def window(self) -> int | None:
        """agent.yaml's context_window, the CLI's report, the table by model, else the largest context seen."""
        return self._window()[0]

    @property
    def window_source(self) -> str | None:
        """Where :attr:`window` comes from: agent.yaml, provider, table, observed (a lower bound), or None."""
        return self._window()[1]

    def _window(self) -> tuple[int | None, str | None]:
        if self.configured_window:
            return self.configured_window, "agent.yaml"
        if self.reported_window:
            return self.reported_window, "provider"
        if window := table_window(self.model):
            return window, "table"
        if self.largest_context:
            return self.largest_context, "observed"
        return None, None

    @property
    def context(self) -> int:
        return self.last.context if self.last else 0

    @property
    def threshold(self) -> int | None:
        """Where the CLI compacts: ``compaction_at`` when set (never past the window less the buffer, where the CLI
        compacts anyway: it clamps its setting to the model's window), else the window less the buffer."""
        window = self.window
        if self.compaction_at is not None:  # a window only observed is a lower bound: it does not clamp
            known = None if self.window_source == "observed" else window
            return self.compaction_at if known is None else min(self.compaction_at, max(known - self.buffer, 0))
        return None if window is None else max(window - self.buffer, 0)

    @property
    def compaction_known(self) -> bool:
        """Where compaction happens is known: set (``compaction_at``), or from a window that is not a lower bound."""
        return self.compaction_at is not None or self.window_source not in ("observed", None)

    @property
    def to_compaction(self) -> int | None:
        threshold = self.threshold
        return None if threshold is None else threshold - self.context

    @property
    def percent(self) -> float | None:
        window = self.window
        return None if not window else 100.0 * self.context / window

    def add(self, event: Event) -> CompactionWarning | None:
        """Account for ``event``; return a warning when this call crossed the threshold."""
        if isinstance(event, CallUsage):
            self.calls += 1
            self.total = self.total + event.usage
            self.last = event.usage
            self._last_call_id = event.call_id
            if event.model:
                self.model = self.model or event.model
            self.largest_context = max(self.largest_context, event.usage.context)
            return self._check()
        if isinstance(event, OutputFinal):
            if self.last is not None and event.call_id == self._last_call_id:
                extra = event.output - self.last.output
                if extra > 0:
                    self.total = self.total + Usage(output=extra)
                    self.last = replace(self.last, output=event.output)
        elif isinstance(event, ContextWindow):
            self.reported_window = event.tokens
            return self._check()
        elif isinstance(event, Compaction):
            self.warned = False
        elif isinstance(event, RateLimits):
            self.rate_limits = event
        elif isinstance(event, CacheTtl):
            self.cache_ttl = event.seconds
        return None

    def _check(self) -> CompactionWarning | None:
        threshold, window = self.threshold, self.window
        # A window only learned from what was observed is a lower bound: no warning from it (a set compaction point is known).
        if threshold is None or self.last is None or not self.compaction_known:
            return None
        if self.context >= threshold:
            if not self.warned:
                self.warned = True
                return CompactionWarning(self.context, threshold, window or threshold)
        else:
            self.warned = False
        return None
