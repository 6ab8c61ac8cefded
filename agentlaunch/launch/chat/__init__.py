"""The line chat: agentlaunch's own prompt over the CLI's headless stream, its door for agentlaunch send, and
Codex's app-server behind it."""
