"""The fleet: which agents exist, which of them run where, in what state, with which session.

One read model that `status` (every form), the deck, `send`, `stop`/`restart`/`fork`, `tmux up`/`down` and
`worktrees` query, none re-deriving it:

- :mod:`.records` is the one reader of the live status records (``<state dir>/status/*.json``);
- :mod:`.panes` is the one place that runs ``tmux list-panes`` and reads what it prints;
- :mod:`.states` says once what ``stopped``, ``dead``, ``stale`` and "needs you" mean;
- :mod:`.notes` reads the notes `stop` and a budget leave, :mod:`.setups` the worktree setups' records;
- :mod:`.model` joins them (and the agents defined) into one list of :class:`~.model.Agent`, numbering forks;
- :mod:`.contract` is its ``--json`` form, versioned (``agentlaunch fleet --json``: docs/fleet.md).

Standard library only, and no pathlib, dataclasses nor typing at run time: ``status --line`` reads it at every
shell prompt (``tests/test_status_fast.py`` holds the imports). ``tests/test_fleet_room.py`` holds that no module
outside this package runs ``list-panes`` or reads the status folder.
"""
