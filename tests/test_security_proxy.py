"""Attacks on the model proxy from inside a real sandbox (its only way out), each shown blocked. The
proxy runs in the driver's process (or a rollout worker's), so what a request makes it hold is the
run's memory, shared by every rollout and the trainer."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from harnessrl.proxy.server import MAX_HEADER_BYTES, ProxyServer
from harnessrl.proxy.testing import scripted_deps
from harnessrl.sandbox import Sandbox, SandboxSpec

pytestmark = [
    pytest.mark.security,
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
    pytest.mark.usefixtures("sandbox_agent"),
]

HEADER_FLOOD = """
import socket, sys
def send(head, more):
    s = socket.create_connection(("127.0.0.1", 18080))
    s.settimeout(20)
    sent = 0
    try:
        s.sendall(head)
        while sent < 40_000_000:  # 40 MB of headers, unless the proxy hangs up first
            s.sendall(more)
            sent += len(more)
    except OSError:
        pass
    s.close()
    return sent
line = b"POST /r/TOKEN/v1/messages HTTP/1.1\\r\\nhost: x\\r\\n"
print(send(line, b"x-a: b\\r\\n" * 12500), send(line + b"x-big: ", b"a" * 100000))
body = b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "' + b"a" * 300000 + b'"}]}'
s = socket.create_connection(("127.0.0.1", 18080))
head = line + b"content-type: application/json\\r\\ncontent-length: %d\\r\\n" % len(body)
s.sendall(head + b"connection: close\\r\\n\\r\\n" + body)
print(s.recv(200).split(b"\\r\\n")[0].decode())
"""


async def test_headers_past_the_cap_are_refused_from_inside_a_sandbox(sb_base: Path) -> None:
    """httptools keeps every header of a request until the last one arrives, and uvicorn sets no cap:
    45 MB of `x-a: b` lines, sent within the 10 s header deadline, grew the proxy by 620 MB. Now
    the headers of a request stop at `MAX_HEADER_BYTES` with a 431 and a closed connection, while
    a request with a 300 KB body in the same first packet as its headers is served."""
    async with ProxyServer(scripted_deps(["hi"]), port=0) as server:
        info = server.deps.sessions.open("flood")
        token = info.base_url.rsplit("/r/", 1)[1]
        spec = SandboxSpec(base_dir=sb_base, endpoint=("127.0.0.1", server.port))
        async with await Sandbox.create(spec) as sb:
            res = await sb.exec(["python3", "-c", HEADER_FLOOD.replace("TOKEN", token)], timeout_s=60)
    sent, served = res.stdout.split("\n", 1)
    assert served == "HTTP/1.1 200 OK\n", res.stderr
    assert all(int(n) < 8_000_000 for n in sent.split()), sent  # hung up on, not 40 MB taken in
    assert MAX_HEADER_BYTES == 64 * 1024


GARBAGE = """
import socket
codes = []
for _ in range(100):
    s = socket.create_connection(("127.0.0.1", 18080))
    s.sendall(b"\\x16\\x03\\x01 not http\\r\\n\\r\\n")
    codes.append(s.recv(100).split(b"\\r\\n")[0].decode())
    s.close()
print(len(codes), set(codes))
"""


async def test_garbage_requests_write_no_warnings_into_the_drivers_log(
    sb_base: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """uvicorn logs one warning per malformed request: a sandbox sending garbage in a loop filled the
    driver's log at its own pace. Such requests still get uvicorn's 400, and a debug line."""
    uvicorn_log = logging.getLogger("uvicorn.error")
    async with ProxyServer(scripted_deps(["hi"]), port=0) as server:
        # once started: uvicorn configures its loggers (level, handlers, no propagation) on start
        level = uvicorn_log.level
        uvicorn_log.setLevel(logging.DEBUG)
        uvicorn_log.addHandler(caplog.handler)
        try:
            spec = SandboxSpec(base_dir=sb_base, endpoint=("127.0.0.1", server.port))
            async with await Sandbox.create(spec) as sb:
                res = await sb.exec(["python3", "-c", GARBAGE], timeout_s=60)
        finally:
            uvicorn_log.removeHandler(caplog.handler)
            uvicorn_log.setLevel(level)
    assert res.stdout == "100 {'HTTP/1.1 400 Bad Request'}\n", res.stderr
    noise = [r for r in caplog.records if r.getMessage() == "Invalid HTTP request received."]
    assert len(noise) >= 100 and {r.levelno for r in noise} == {logging.DEBUG}
