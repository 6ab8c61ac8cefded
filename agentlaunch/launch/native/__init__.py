"""The native mode: the provider CLI's own interface relayed in the user's terminal, agentlaunch's meters beside it."""
