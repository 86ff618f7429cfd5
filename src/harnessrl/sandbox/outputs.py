"""A command's output, read from the memory files the host opened for it: bounded, cut in the middle
when over the limit, and off the event loop when large."""

from __future__ import annotations

import asyncio
import os

MAX_OUTPUT_BYTES = 32 * 1024 * 1024
"""Most of one stream kept by exec(): the first MiB and the rest from the end (harnesses print their
final result last), with a marker saying how much was cut."""


def read_output_fd(fd: int, limit: int = MAX_OUTPUT_BYTES) -> str:
    """A command's stdout/stderr from the host's own descriptor, cut in the middle when over `limit`."""
    size = os.fstat(fd).st_size
    if size <= limit:
        data = os.pread(fd, size, 0)
    else:
        head = os.pread(fd, 1 << 20, 0)
        cut = f"\n[... {size - limit} bytes cut by harnessrl ...]\n".encode()
        data = head + cut + os.pread(fd, limit - len(head), size - (limit - len(head)))
    return data.decode(errors="replace")


INLINE_OUTPUT_BYTES = 1 << 16
"""Outputs up to this size are read on the event loop; larger ones (up to 2 x MAX_OUTPUT_BYTES, which
took ~1 s to read and decode) in a thread, so the loop that serves the proxy never waits on them."""


async def read_outputs(out_fd: int, err_fd: int) -> tuple[str, str]:
    """`read_output_fd` of a command's stdout and stderr, off the loop when they are large."""
    if os.fstat(out_fd).st_size + os.fstat(err_fd).st_size <= INLINE_OUTPUT_BYTES:
        return read_output_fd(out_fd), read_output_fd(err_fd)
    return await asyncio.to_thread(lambda: (read_output_fd(out_fd), read_output_fd(err_fd)))
