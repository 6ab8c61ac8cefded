"""Fake provider APIs on 127.0.0.1: record every request, answer with scripted SSE.

Used by the test suite (the real CLIs run against them) and by the prefix
doctor (a capture endpoint). They never forward anything anywhere.
"""
