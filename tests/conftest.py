"""Shared fixtures. Paths to the team's shared fixtures are resolved relative to the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    p = SHARED / "fixtures"
    if not p.is_dir():
        pytest.skip(f"shared fixtures not found at {p}")
    return p
