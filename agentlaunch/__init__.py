"""agentlaunch: launch AI coding agents with cache-friendly instructions and live usage."""

__version__ = "0.1.0"
