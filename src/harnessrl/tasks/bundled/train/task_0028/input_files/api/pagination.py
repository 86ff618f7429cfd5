"""Pagination helpers for list endpoints. Pages are numbered from 1."""


def paginate(items: list, page: int, per_page: int) -> list:
    """The items on `page` (1-based); an empty list past the last page. ValueError for page/per_page < 1."""
    if page < 1:
        raise ValueError("page starts at 1")
    start = page * per_page
    return items[start : start + per_page]


def page_count(total: int, per_page: int) -> int:
    """Number of pages needed for `total` items (0 when there are none). ValueError for per_page < 1."""
    return total // per_page + 1
