"""Experiment trackers: a run's scalars, config and tables to TensorBoard and, when asked, to the
trackers users already use, through their own clients in offline / local modes.

    with open_trackers(out_dir, cfg.tracking, kind="eval", config=cfg.model_dump(mode="json")) as t:
        t.scalars(step, {"reward/mean": 0.5})
        t.table("eval/policies", ["policy", "Pass@1"], [["sft", "0.400"]])

TensorBoard (`tb/` under the run folder, `report.tbevents`, no dependency) always gets everything:
scalars as scalars, the config (JSON) and each table (markdown) as texts. `tracking.report_to` adds:

    wandb    `wandb.init(mode="offline", dir=<run folder>)`: `<run folder>/wandb/offline-run-*/`;
             scalars by `run.log(..., step=)`, tables as `wandb.Table`, the config as the run config;
             `wandb sync <that folder>` uploads it later
    mlflow   the file store `file:<run folder>/mlruns` (its maintenance-mode opt-in
             `MLFLOW_ALLOW_FILE_STORE=true` is set for it: the database store would need SQLAlchemy
             and ~20 s of schema migrations per run folder); scalars as metrics, the config flattened
             into params (`train.lr`) and whole as `config.json`, each table as `tables/<name>.md`
    trackio  its local SQLite database (`$TRACKIO_DIR`, else `~/.cache/huggingface/trackio`);
             scalars by `trackio.log`, tables as `trackio.Table`, the config as the run config

Run names: `tracking.run_name`, else the run folder as `<parent>/<name>`; the kind (`train`, `sft`,
`eval`, `experiment`) is wandb's job type, mlflow's `kind` tag and trackio's group. A tracker's
client is imported only when asked for; missing, it is a `TrackerError` naming its extra. A tracker
that fails while logging is dropped with a warning: reporting never stops a training run.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from harnessrl.config_section import ConfigError
from harnessrl.report.tbevents import EventWriter


class TrackerError(ConfigError):
    """A tracker asked for in `tracking.report_to` cannot be used (its client is not installed)."""


class Tracker(Protocol):
    """One tracker of a run; it took the run's config when it was made."""

    def scalars(self, step: int, values: Mapping[str, float]) -> None: ...
    def table(self, name: str, header: Sequence[str], rows: Sequence[Sequence[str]], step: int) -> None: ...
    def close(self) -> None: ...


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows])


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """`{"train": {"lr": 1e-6}}` -> `{"train.lr": "1e-06"}` (lists and None as JSON)."""
    out: dict[str, str] = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out |= flatten(v, key + ".")
        else:
            out[key] = v if isinstance(v, str) else json.dumps(v)
    return out


class TensorBoard:
    """`<run folder>/tb`: scalars, and the config and tables as markdown texts."""

    def __init__(self, run_dir: Path, config: Mapping[str, Any]) -> None:
        self.events = EventWriter(run_dir / "tb")
        if config:
            body = json.dumps(config, indent=2, sort_keys=True, default=str)
            self.events.text(0, {"config": "    " + body.replace("\n", "\n    ")})

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        self.events.scalars(step, values)

    def table(self, name: str, header: Sequence[str], rows: Sequence[Sequence[str]], step: int) -> None:
        self.events.text(step, {name: markdown_table(header, rows)})

    def close(self) -> None:
        return None


class Wandb:
    def __init__(self, run_dir: Path, project: str, name: str, kind: str, config: Mapping[str, Any]) -> None:
        import wandb

        self.wandb = wandb
        settings = wandb.Settings(console="off", silent=True, x_disable_stats=True)
        run_dir.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            mode="offline", dir=str(run_dir), project=project, name=name, job_type=kind,
            config=dict(config), settings=settings,
        )  # fmt: skip

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        self.run.log(dict(values), step=step)

    def table(self, name: str, header: Sequence[str], rows: Sequence[Sequence[str]], step: int) -> None:
        self.run.log({name: self.wandb.Table(columns=list(header), data=[list(r) for r in rows])}, step=step)

    def close(self) -> None:
        self.run.finish()


class Mlflow:
    def __init__(self, run_dir: Path, project: str, name: str, kind: str, config: Mapping[str, Any]) -> None:
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=(run_dir / "mlruns").resolve().as_uri())
        found = self.client.get_experiment_by_name(project)
        exp = found.experiment_id if found is not None else self.client.create_experiment(project)
        self.run_id = self.client.create_run(exp, run_name=name, tags={"kind": kind}).info.run_id
        params = [Param(k, v[:6000]) for k, v in flatten(config).items()]
        for i in range(0, len(params), 100):  # mlflow takes at most 100 params per batch
            self.client.log_batch(self.run_id, params=params[i : i + 100])
        if config:
            self.client.log_dict(self.run_id, dict(config), "config.json")

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(k, float(v), now, step) for k, v in values.items() if v == v]
        for i in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[i : i + 1000])

    def table(self, name: str, header: Sequence[str], rows: Sequence[Sequence[str]], step: int) -> None:
        self.client.log_text(self.run_id, markdown_table(header, rows) + "\n", f"tables/{name}.md")

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


class Trackio:
    def __init__(self, run_dir: Path, project: str, name: str, kind: str, config: Mapping[str, Any]) -> None:
        import trackio

        self.trackio = trackio
        trackio.init(
            project=project,
            name=name,
            group=kind,
            config=dict(config),
            auto_log_cpu=False,
            auto_log_gpu=False,
        )

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        self.trackio.log(dict(values), step=step)

    def table(self, name: str, header: Sequence[str], rows: Sequence[Sequence[str]], step: int) -> None:
        self.trackio.log(
            {name: self.trackio.Table(columns=list(header), data=[list(r) for r in rows])}, step=step
        )

    def close(self) -> None:
        self.trackio.finish()


TRACKERS: dict[str, tuple[type, str]] = {
    "wandb": (Wandb, "wandb"),
    "mlflow": (Mlflow, "mlflow"),
    "trackio": (Trackio, "trackio"),
}
"""name -> (tracker, the pyproject extra that installs its client)."""


class Trackers:
    """Every tracker of a run, TensorBoard first; each call goes to all of them (see the docstring)."""

    def __init__(self, trackers: Sequence[Tracker]) -> None:
        self.trackers = list(trackers)

    def _each(self, method: str, *args: Any) -> None:
        for t in list(self.trackers):
            try:
                getattr(t, method)(*args)
            except Exception as e:  # reporting never stops a run: that tracker is dropped
                warnings.warn(f"{type(t).__name__} tracker failed ({e!r}); it is dropped", stacklevel=2)
                self.trackers.remove(t)

    def scalars(self, step: int, values: Mapping[str, float]) -> None:
        self._each("scalars", step, values)

    def table(self, name: str, header: Sequence[str], rows: Sequence[Sequence[str]], step: int = 0) -> None:
        self._each("table", name, header, [[str(c) for c in r] for r in rows], step)

    def close(self) -> None:
        self._each("close")
        self.trackers = []

    def __enter__(self) -> Trackers:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def require(tracking: Any) -> None:
    """TrackerError unless the client of every tracker in `tracking.report_to` is installed."""
    import importlib.util

    for tracker in getattr(tracking, "report_to", []) or []:
        if importlib.util.find_spec(tracker) is None:
            extra = TRACKERS[tracker][1]
            why = f"tracking.report_to has {tracker!r} but it is not installed"
            raise TrackerError(f"{why}: pip install 'harnessrl[{extra}]'")


def open_trackers(
    run_dir: str | Path,
    tracking: Any = None,
    *,
    kind: str,
    config: Mapping[str, Any] | None = None,
) -> Trackers:
    """TensorBoard plus `tracking.report_to` (a `config.TrackingConfig`; None = TensorBoard only) for
    the run folder `run_dir`; logs `config` first when given."""
    run = Path(run_dir)
    config = dict(config or {})
    opened: list[Tracker] = [TensorBoard(run, config)]
    name = getattr(tracking, "run_name", None) or f"{run.resolve().parent.name}/{run.name}"
    try:
        for tracker in getattr(tracking, "report_to", []) or []:
            cls, extra = TRACKERS[tracker]
            try:
                opened.append(cls(run, tracking.project, name, kind, config))
            except ImportError as e:
                raise TrackerError(
                    f"tracking.report_to has {tracker!r} but its client is not installed ({e}): "
                    f"pip install 'harnessrl[{extra}]'"
                ) from None
    except BaseException:
        Trackers(opened).close()
        raise
    return Trackers(opened)
