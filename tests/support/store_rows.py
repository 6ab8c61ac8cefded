"""A usage store for a test (the db and store fixtures) and the call records it writes (test_store*.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.events import Usage
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def call(agent: str = "reviewer", at: datetime = T0, cost: float | None = 0.01, **kw: Any) -> CallRecord:
    fields: dict[str, Any] = {
        "provider": "claude",
        "session_id": "s1",
        "turn": 1,
        "model_requested": "claude-opus-5-5",
        "model_reported": "claude-opus-5-5",
        "usage": Usage(input=10, cache_write=20, cache_read=70, output=5, reasoning=1),
        "price_key": None if cost is None else "test",
    }
    fields.update(kw)
    return CallRecord(agent=agent, at=at, cost_usd=cost, **fields)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "usage.sqlite3"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store.open(db) as s:
        yield s
