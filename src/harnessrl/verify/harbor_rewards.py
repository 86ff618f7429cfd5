"""A Harbor verifier's reward files, read by the host and parsed: `read_rewards` -> `parse_rewards`.

The tests write `/logs/verifier/reward.json` and/or `reward.txt`. That folder is one the host made on
the verifier sandbox's own tmpfs and holds a descriptor of from before anything ran
(`SandboxSpec.out_dirs`); the host reads it only after every process of the sandbox is gone
(`Sandbox.stop`), so nothing inside runs while it reads, and no interpreter inside is trusted with
the verdict. Each file is opened relative to that descriptor with O_NOFOLLOW | O_NONBLOCK (a link
is not followed, a FIFO does not block) and taken only as a regular file of at most
`MAX_REWARD_BYTES` of UTF-8. Parsing follows Harbor: `float()` of reward.txt's text, reward.json's
numeric values (non-numeric ones ignored), reward.json first. Neither ever raises: whatever is
wrong with the files is the policy's failure, scored 0 with the reason.
"""

from __future__ import annotations

import math
import os
import stat

from harnessrl.formats import untrusted_json

REWARD_DIR = "/logs/verifier"
REWARD_FILES = ("reward.json", "reward.txt")
MAX_REWARD_BYTES = 64 * 1024


def read_reward(dir_fd: int, name: str) -> tuple[str | None, str | None]:
    """(text, None), (None, why it is not taken), or (None, None) when there is no such file."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"cannot be opened ({os.strerror(e.errno) if e.errno else e})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "not a regular file"
        data = b""
        while len(data) <= MAX_REWARD_BYTES:
            chunk = os.read(fd, MAX_REWARD_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as e:
        return None, f"cannot be read ({os.strerror(e.errno) if e.errno else e})"
    finally:
        os.close(fd)
    if len(data) > MAX_REWARD_BYTES:
        return None, f"over {MAX_REWARD_BYTES} bytes"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "not UTF-8"


def read_rewards(dir_fd: int) -> tuple[dict[str, str | None], dict[str, str]]:
    """The texts of reward.json and reward.txt in the folder `dir_fd` ({name: text or None}) and why
    any of them was not taken ({name: why})."""
    texts: dict[str, str | None] = {}
    problems: dict[str, str] = {}
    for name in REWARD_FILES:
        texts[name], why = read_reward(dir_fd, name)
        if why is not None:
            problems[name] = why
    return texts, problems


def _number(text: str, name: str) -> tuple[float | None, str | None]:
    try:
        value = float(text)  # Harbor: float(reward.txt's text); surrounding whitespace is fine
    except (ValueError, OverflowError):
        return None, f"{REWARD_DIR}/{name} is not a number: {text[:80]!r}"
    return _checked(value, f"{REWARD_DIR}/{name}")


def _checked(value: float, what: str) -> tuple[float | None, str | None]:
    if not math.isfinite(value):
        return None, f"{what} is not finite: {value!r}"
    if value < 0:
        return None, f"{what} is negative: {value!r}"
    return value, None


def _from_json(text: str) -> tuple[dict[str, float], str | None]:
    try:  # the one decoder: nesting, long integers, and lone surrogates (a metric name no record takes)
        data = untrusted_json.loads(text, f"{REWARD_DIR}/reward.json", max_bytes=MAX_REWARD_BYTES)
    except untrusted_json.UntrustedJSONError:
        return {}, f"{REWARD_DIR}/reward.json is not JSON"
    if not isinstance(data, dict):
        return {}, f"{REWARD_DIR}/reward.json holds {type(data).__name__}, not an object"
    metrics: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue  # Harbor keeps numeric values only
        number, why = _checked(float(value), f"{REWARD_DIR}/reward.json {key!r}")
        if why is not None or number is None:
            return {}, why
        metrics[key] = number
    if not metrics:
        return {}, f"{REWARD_DIR}/reward.json holds no number"
    return metrics, None


def parse_rewards(
    texts: dict[str, str | None], problems: dict[str, str]
) -> tuple[dict[str, float], str | None]:
    """The metrics the tests wrote (`read_rewards`'s answer) -> (metrics, None) or ({}, why). Never
    raises. reward.json wins over reward.txt (Harbor's order), reward.txt filling in a missing
    `reward`."""
    if problems:
        name, problem = next(iter(problems.items()))
        return {}, f"{REWARD_DIR}/{name}: {problem}"
    reward_json, reward_txt = texts.get("reward.json"), texts.get("reward.txt")
    if reward_json is not None:
        metrics, why = _from_json(reward_json)
        if why is None and "reward" not in metrics and reward_txt is not None:
            value, txt_why = _number(reward_txt, "reward.txt")
            if txt_why is None and value is not None:
                metrics["reward"] = value
        return metrics, why
    if reward_txt is not None:
        value, why = _number(reward_txt, "reward.txt")
        return ({"reward": value}, None) if value is not None else ({}, why)
    return {}, f"no reward: the tests wrote neither {REWARD_DIR}/reward.txt nor reward.json"


def score_of(metrics: dict[str, float]) -> float:
    """The `reward` metric where there is one, else the mean of the metrics (0.0 for none)."""
    if not metrics:
        return 0.0
    return metrics["reward"] if "reward" in metrics else sum(metrics.values()) / len(metrics)
