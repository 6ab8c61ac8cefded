"""`agentlaunch deck`: one full-screen list of every agent, with a live preview of its pane and keys to step in.

Only the deck imports Textual (``app.py``: the keys; ``board.py``: the list, preview and message line;
``watching.py``: when the rows are read again; ``agent_list.py``, ``screens.py``, ``picker.py``); ``rows.py`` gathers
what the list shows from the existing readers (status records, tmux, worktrees), ``worker_reads.py`` what it reads in a
worker thread (git, the usage store, the definitions), ``actions.py`` runs agentlaunch's own commands and reads a
pane, ``start.py`` reads the command's options without the full CLI. Nothing on the launch path imports this package.
"""
