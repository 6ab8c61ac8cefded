"""An agent's git worktree: made, reused, listed and removed (``git_worktree``), and the commands that set a new one up,
with their log and record (``setup_commands``). A base package: it imports only the base modules."""
