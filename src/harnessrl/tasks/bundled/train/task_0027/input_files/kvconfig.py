"""Parser for the `key = value` files our deploy scripts read (a tiny subset of INI, no sections)."""


def parse_config(text: str) -> dict[str, str]:
    """Parse `key = value` lines into a dict.

    Blank lines and lines whose first non-space character is '#' are ignored. Whitespace around keys
    and values is stripped. The value is everything after the FIRST '=' (values may contain '=').
    A later duplicate key overrides an earlier one. A non-blank, non-comment line without '=' raises
    ValueError whose message names the line number as "line N".
    """
    result: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            continue
        key, value = line.split("=")
        result[key] = value
    return result


def parse_bool(value: str) -> bool:
    """true/yes/on/1 -> True, false/no/off/0 -> False; case-insensitive, surrounding spaces ignored."""
    v = value
    if v in ("true", "yes", "on", "1"):
        return True
    if v in ("false", "no", "off", "0"):
        return False
    raise ValueError(f"not a boolean: {value!r}")
