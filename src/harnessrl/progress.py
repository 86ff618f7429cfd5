"""Progress of a batch of rollouts, for `train` and `eval`: a rich Live panel on a terminal, plain
lines (at most one per `interval_s`, and one when the batch ends unless `summary=False`) otherwise.

    progress = Progress()                                   # live on a TTY, plain lines in logs
    with progress:
        progress.start("eval codex", total=len(jobs), concurrency=cfg.rollout.concurrency)
        rollouts = await runner.run_many(jobs, on_done=progress.on_rollout_done)
        progress.finish()

What it shows: rollouts done / failed (any status but ok) / running, sampled tokens, the batch's ETA
(elapsed / done x left) and, when `steps` is given to `start`, the run's ETA (mean batch time x the
batches left, this one's ETA included). `running` is min(concurrency, not yet done): exact for
`RolloutRunner.run_many`, which queues every job at once behind its concurrency slots. Every method
is cheap and never raises into the caller's loop: progress must not break a run.

`console()` and `quiet_loading()` set up the terminal for the commands that show it (`eval`, `sft`,
the experiments).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from harnessrl.types import Rollout, RolloutStatus

if TYPE_CHECKING:
    from rich.console import Console


@dataclass
class BatchState:
    """Counters of the batch in flight."""

    title: str = ""
    total: int = 0
    concurrency: int = 0
    done: int = 0
    failed: int = 0
    tokens: int = 0
    started: float = 0.0
    step: int | None = None
    steps: int | None = None

    @property
    def running(self) -> int:
        left = self.total - self.done
        return min(self.concurrency, left) if self.concurrency > 0 else left


def _secs(s: float | None) -> str:
    if s is None:
        return "-"
    s = round(s)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    """See the module docstring. `live=None` means live exactly when stdout is a terminal."""

    def __init__(
        self,
        *,
        live: bool | None = None,
        echo: Callable[[str], None] | None = None,
        interval_s: float = 30.0,
        summary: bool = True,
        clock: Callable[[], float] = time.monotonic,
        console: Any = None,
    ) -> None:
        self.live = sys.stdout.isatty() if live is None else live
        self.echo = echo or (lambda line: print(line, flush=True))
        self.interval_s = interval_s
        self.summary = summary
        """Print a closing line per batch when not live (train leaves it out: its step line follows)."""
        self.clock = clock
        self.console = console
        """The rich Console of the live panel (None: rich's default, stdout)."""
        self.state = BatchState()
        self.batch_seconds: list[float] = []
        """Wall seconds of each finished batch (the run ETA averages them)."""
        self._last_line = float("-inf")
        self._live: Any = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> Progress:
        if self.live:
            from rich.live import Live

            self._live = Live(
                get_renderable=self._panel, refresh_per_second=4, transient=True, console=self.console
            )
            self._live.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def start(
        self,
        title: str,
        total: int,
        concurrency: int = 0,
        *,
        step: int | None = None,
        steps: int | None = None,
    ) -> None:
        """A batch of `total` rollouts starts (`step` of `steps`, 0-based, for a training run)."""
        self.state = BatchState(title, total, concurrency, started=self.clock(), step=step, steps=steps)
        self._last_line = self.clock()

    def on_rollout_done(self, rollout: Rollout) -> None:
        """Call once per finished rollout (`RolloutRunner.run_many(..., on_done=...)`)."""
        st = self.state
        st.done += 1
        st.failed += rollout.status is not RolloutStatus.OK
        st.tokens += sum(len(c.output_ids) for c in rollout.calls)
        now = self.clock()
        if self._live is not None:
            self._live.refresh()
        elif not self.live and st.done < st.total and now - self._last_line >= self.interval_s:
            self._last_line = now
            self.echo(self.line())

    def finish(self) -> None:
        """The batch ended: its time joins the run ETA; one closing line when not live (and `summary`)."""
        self.batch_seconds.append(self.clock() - self.state.started)
        if not self.live and self.summary:
            self.echo(self.line())

    # -- views -------------------------------------------------------------------------------------

    def eta(self) -> tuple[float | None, float | None]:
        """(batch ETA, run ETA) in seconds; None until a rollout has finished (or without `steps`)."""
        st = self.state
        elapsed = self.clock() - st.started
        batch = elapsed / st.done * (st.total - st.done) if st.done else None
        if st.steps is None or st.step is None or batch is None:
            return batch, None
        later = st.steps - st.step - 1
        per = sum(self.batch_seconds) / len(self.batch_seconds) if self.batch_seconds else elapsed + batch
        return batch, batch + later * per

    def line(self) -> str:
        """`[train step 1/2] rollouts 3/8 (failed 1, running 4) | 1,234 tokens | eta 12s (run 1m05s)`."""
        st = self.state
        where = st.title if st.step is None else f"{st.title} step {st.step + 1}/{st.steps}"
        batch, run = self.eta()
        run_part = f" (run {_secs(run)})" if run is not None else ""
        return (
            f"[{where}] rollouts {st.done}/{st.total} (failed {st.failed}, running {st.running}) | "
            f"{st.tokens:,} tokens | {_secs(self.clock() - st.started)} elapsed, eta {_secs(batch)}{run_part}"
        )

    def _panel(self) -> Any:
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        st = self.state
        grid = Table.grid(padding=(0, 1))
        bar = ProgressBar(total=max(st.total, 1), completed=st.done, width=30)
        grid.add_row(bar, Text(self.line()))  # Text: no markup ("[eval codex]" is not a style tag)
        return grid


def quiet_loading() -> None:
    """No model-loading progress bars when stdout is not a terminal (they would fill logs)."""
    if sys.stdout.isatty():
        return
    import os

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # transformers is only needed by the embedded engine
        pass


PIPED_WIDTH = 100_000
"""Columns of a console that is not a terminal: wide enough that no table cell is cut or wrapped
(a table is as wide as its widest row; text lines are never wrapped)."""


def console(*, stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr): the terminal's, or, piped or in a log, one that never cuts
    a table cell (`PIPED_WIDTH` columns, lines unwrapped), so every name and number is whole."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(width=PIPED_WIDTH, soft_wrap=True, stderr=stderr)
