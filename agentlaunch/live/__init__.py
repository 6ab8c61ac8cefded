"""What is shown while agents run: the terminal view, the live status records, tmux."""
