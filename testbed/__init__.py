"""The real provider CLIs driven against agentlaunch's fake APIs, for the tests and the benches alike.

What both need and neither owns: the pinned CLIs installed from ``tests/clis``'s lockfile (:mod:`testbed.clis`), the
seeded homes that point them at the fakes (:mod:`testbed.claude_tui`, :mod:`testbed.native_tui`), the screen of an
interface on a PTY (:mod:`testbed.pty_screen`), an agent's files (:mod:`testbed.agent_files`), and the receivers
and clients a run talks to (OTLP, Codex's app-server, a headless turn's events, a native source's flows). Nothing
here is a pytest fixture; pytest-only helpers stay in ``tests/support``.
"""
