"""Every stored call exported over OTLP/HTTP with the GenAI conventions (docs/telemetry.md).

What is agentlaunch's own: the store as a durable export queue (``queue``), the mapping of a call onto the
GenAI semantic conventions with idempotent cumulative points (``payload``), the sink and its background sender
(``sink``, ``export``). The configuration is the standard ``OTEL_*`` variables (``config``); the messages are
the official OTLP ones (``wire``), sent by ``request`` over ``transport``.
"""
