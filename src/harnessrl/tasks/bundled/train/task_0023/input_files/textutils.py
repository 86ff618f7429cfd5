"""Small text helpers used by the blog generator."""

import re
import unicodedata


def slugify(title: str) -> str:
    """Turn a post title into a URL slug: lowercase ASCII words joined by single hyphens."""
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    text = text.lower()
    text = re.sub(r"[^a-z0-9]", "-", text)
    return text


def truncate_words(text: str, limit: int) -> str:
    """Keep at most `limit` words of `text`; append "..." only when words were cut off."""
    words = text.split()
    if len(words) < limit:
        return " ".join(words)
    return " ".join(words[:limit]) + "..."
