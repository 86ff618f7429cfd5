"""Tokenizing off the event loop: a call whose body brings a large new suffix is parsed, rendered and
encoded in a worker thread (`handler.LARGE_BODY`), so a small call of another session that arrives
meanwhile is answered while the large one is still being encoded, not after it.

The bound is relative, so that a loaded machine slows both sides alike: the small call must be done
within half the time the large call takes. Measured on 2 loaded cores: 7-17 ms against 0.35-0.83 s;
with the encode on the loop (bodies under 256 KiB, before) it took 0.30 s against 0.35 s."""

from __future__ import annotations

import asyncio
import random
import time

import httpx

from harnessrl.proxy.testing import scripted_proxy

CHAT = "/v1/chat/completions"


def fresh_text(n_chars: int, seed: int) -> str:
    """Words the tokenizer has not seen in this process (its piece cache cannot help)."""
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < n_chars:
        word = "".join(rng.choice("bcdfghjklmnpqrstvwxzaeiou") for _ in range(rng.randrange(3, 11)))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


async def test_a_huge_new_suffix_does_not_hold_a_small_call_behind_it() -> None:
    server = scripted_proxy(["ok"]).start()  # its own event loop, in a thread
    big_text = fresh_text(240_000, seed=time.time_ns())  # ~240 KB: under the old 256 KiB thread limit
    try:
        big, small = server.server.deps.sessions.open("big"), server.server.deps.sessions.open("small")
        async with httpx.AsyncClient(timeout=120) as client:
            warm = {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
            assert (await client.post(f"{small.base_url}{CHAT}", json=warm)).status_code == 200

            async def timed(base: str, content: str) -> float:
                t0 = time.perf_counter()
                body = {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": content}]}
                reply = await client.post(f"{base}{CHAT}", json=body)
                assert reply.status_code == 200, reply.text
                return time.perf_counter() - t0

            large = asyncio.ensure_future(timed(big.base_url, big_text))
            await asyncio.sleep(0.05)  # the large call is being encoded
            small_s = await timed(small.base_url, "hello")
            large_s = await large
    finally:
        server.stop()
    assert large_s > 0.1, f"the large call took {large_s:.3f} s: too little to tell"
    assert small_s < 0.5 * large_s, f"small call {small_s:.3f} s behind a large one of {large_s:.3f} s"
