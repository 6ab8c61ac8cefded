"""The native sources: what a CLI's own interface reports, read from its hooks, transcripts, status line and session files."""
