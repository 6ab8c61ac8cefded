"""The early start: a CLI spawned from the last launch's plan before agentlaunch's imports, adopted when it was
started exactly as this launch would (a headless persistent CLI, Codex's first turn and app-server, a native
interface). Nothing here: the entry point imports its modules before anything else."""
