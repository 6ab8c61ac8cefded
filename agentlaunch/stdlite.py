"""What a launch takes from ``hashlib``, ``hmac`` and ``uuid``, without importing them.

``hashlib`` loads OpenSSL's ``_hashlib`` (about 2 ms of CPU, before the early
start's spawn too) although a launch only ever hashes with SHA-256, which
CPython also builds on its own (``_sha256`` up to 3.11, ``_sha2`` since 3.12:
the same digests); ``hmac`` imports hashlib for ``compare_digest``, which is
``_operator._compare_digest`` itself. ``uuid`` imports ``platform`` (together about 1.5 ms) for
what ``os.urandom`` gives. Measured with ``bench/bench_imports.py``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (about 4 ms before the early start's spawn)

if TYPE_CHECKING:
    from typing import Protocol

    class Hash(Protocol):
        """The part of a ``hashlib`` hash object agentlaunch uses."""

        def update(self, data: bytes, /) -> None: ...
        def digest(self) -> bytes: ...
        def hexdigest(self) -> str: ...

    from hashlib import sha256 as _sha256
    from hmac import compare_digest as _compare_digest
else:
    try:
        from _operator import _compare_digest  # what hmac.compare_digest is
    except ImportError:  # another Python
        from hmac import compare_digest as _compare_digest

    try:
        from _sha2 import sha256 as _sha256  # CPython 3.12+
    except ImportError:
        try:
            from _sha256 import sha256 as _sha256  # CPython 3.11
        except ImportError:  # a Python built without them: OpenSSL's
            from hashlib import sha256 as _sha256


def sha256(data: bytes = b"") -> Hash:
    """``hashlib.sha256(data)``."""
    return _sha256(data)


def compare_digest(a: bytes, b: bytes) -> bool:
    """``hmac.compare_digest(a, b)``: equal, in a time that does not tell where they differ."""
    return _compare_digest(a, b)


def uuid4() -> str:
    """``str(uuid.uuid4())``: a random (version 4, RFC 4122 variant) UUID in its canonical form."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
