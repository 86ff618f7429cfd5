#!/usr/bin/env bash
set -euo pipefail
cat > api/pagination.py <<'PY'
"""Pagination helpers for list endpoints. Pages are numbered from 1."""


def _check(page: int, per_page: int) -> None:
    if page < 1 or per_page < 1:
        raise ValueError(f"page and per_page must be >= 1, got page={page}, per_page={per_page}")


def paginate(items: list, page: int, per_page: int) -> list:
    """The items on `page` (1-based); an empty list past the last page. ValueError for page/per_page < 1."""
    _check(page, per_page)
    start = (page - 1) * per_page
    return items[start : start + per_page]


def page_count(total: int, per_page: int) -> int:
    """Number of pages needed for `total` items (0 when there are none). ValueError for per_page < 1."""
    _check(1, per_page)
    return (total + per_page - 1) // per_page
PY
