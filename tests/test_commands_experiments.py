"""The experiment commands (quickstart, scripts/harness_transfer, scripts/scaling_ablation) share one
config path (`options.experiment_config`) and one runner (`options.run_experiment`): a bad config is a
usage error naming what is wrong, before anything runs."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from harnessrl.commands import ablation, transfer
from harnessrl.commands import options as opt
from harnessrl.commands.quickstart import QUICKSTART_CONFIG, quickstart
from harnessrl.config import Config, ConfigError


def _invoke(main: Any, args: list[str]) -> Any:
    app = typer.Typer()
    app.command()(main)
    return CliRunner().invoke(app, args)


@pytest.mark.parametrize(
    ("main", "args", "named"),
    [
        (quickstart, ["-o", "quickstart.nope=1"], "quickstart.nope"),
        (transfer.main, ["-o", "transfer.arms={}"], "transfer.arms"),  # the experiment's own check
        (transfer.main, ["-o", "train.group_size=0"], "train.group_size"),
        (ablation.main, ["-o", 'ablation.arms=["nonesuch"]'], "nonesuch"),  # ablation's arm check
        (ablation.main, ["-c", "/nonexistent/ablation.toml"], "/nonexistent/ablation.toml"),
    ],
)
def test_a_bad_config_is_a_usage_error_naming_it(main: Any, args: list[str], named: str) -> None:
    result = _invoke(main, args)
    assert result.exit_code == 2, result.output
    assert named in " ".join(result.output.split()).replace("│ ", "").replace(" │", ""), result.output


def test_experiment_config_runs_the_check_after_the_overrides() -> None:
    seen: list[int] = []

    def check(cfg: Config) -> None:
        seen.append(cfg.train.group_size)
        if cfg.train.group_size == 3:
            raise ConfigError("train.group_size: three is not allowed here")

    cfg = opt.experiment_config(None, QUICKSTART_CONFIG, ["train.group_size=5"], check)
    assert cfg.train.group_size == 5 and seen == [5]
    with pytest.raises(typer.BadParameter, match="three is not allowed"):
        opt.experiment_config(None, QUICKSTART_CONFIG, ["train.group_size=3"], check)


def test_run_experiment_passes_fresh_and_prints_progress(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = opt.experiment_config(None, QUICKSTART_CONFIG, [])
    calls: list[tuple[Config, bool]] = []

    async def run(c: Config, *, fresh: bool, echo: Any) -> dict[str, Any]:
        calls.append((c, fresh))
        echo("[stage] running")
        return {"policies": {}}

    summary, seconds = opt.run_experiment(run, cfg, True)
    assert summary == {"policies": {}} and calls == [(cfg, True)] and seconds >= 0
    assert capsys.readouterr().out == "[stage] running\n"
