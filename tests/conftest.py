"""Shared fixtures. Captured harness traffic and the ClawGym-layout example live in tests/fixtures/
(copied from the team's shared fixtures, notes included), so a fresh clone needs nothing beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    assert (FIXTURES / "harness-traffic").is_dir(), f"test fixtures missing at {FIXTURES}"
    return FIXTURES
