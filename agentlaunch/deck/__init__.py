"""`agentlaunch deck`: one full-screen list of every agent, with a live preview of its pane and keys to step in.

Only the deck imports Textual (``app.py``, ``screens.py``); ``rows.py`` gathers what the list shows from the
existing readers (status records, tmux, the usage store, worktrees), ``preview.py`` reads a pane, ``actions.py``
runs agentlaunch's own commands. Nothing on the launch path imports this package.
"""
