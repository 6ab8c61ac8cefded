"""One launch: the session wiring, the loop over the CLI's PTY, spawning, the early start, placing instructions."""
