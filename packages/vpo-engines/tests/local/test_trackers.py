"""Experiment tracking (logger=), veRL metric names, quiet Hugging Face bars, the smoothed training plot."""

from __future__ import annotations

import sys

import pytest

from vpo_core.evaluation.plots import smooth
from vpo_engines.local.config import parse_overrides
from vpo_engines.local.trackers import open_trackers
from vpo_engines.local.train import run
from vpo_engines.runs import RunDir

VERL_NAMES = {
    "actor/pg_loss",
    "actor/kl_loss",
    "actor/entropy",
    "actor/pg_clipfrac",
    "actor/grad_norm",
    "critic/score/mean",
    "critic/advantages/mean",
    "response_length/mean",
    "timing_s/gen",
    "timing_s/update_actor",
}


def test_tensorboard_gets_the_verl_metric_names_and_hf_bars_stay_quiet(tmp_path, capsys, tiny_run):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    run(parse_overrides([*tiny_run, "steps=2", "save_every=1", "logger=console,tensorboard", f"out={out}"]))
    err = capsys.readouterr().err
    assert "Loading weights" not in err
    assert "Writing model shards" not in err
    assert set(RunDir(out).read_metrics()[0]) >= VERL_NAMES
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert VERL_NAMES | {"mean_w_star", "diversity"} <= tags
    assert [e.step for e in events.Scalars("actor/pg_loss")] == [0, 1]


def test_wandb_offline_needs_no_account(tmp_path, monkeypatch, tiny_run):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    run(parse_overrides([*tiny_run, "steps=1", "logger=wandb", f"out={out}"]))
    assert list((out / "wandb").glob("offline-run-*"))


@pytest.mark.parametrize(("name", "package"), [("wandb", "wandb"), ("tensorboard", "torch.utils.tensorboard")])
def test_a_missing_tracker_package_is_named(tmp_path, monkeypatch, name, package):
    monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(
        ValueError, match=rf"logger={name} needs the {name} package: pip install 'vpo-engines\[tracking\]'"
    ):
        open_trackers([name], tmp_path, config={})


def test_smooth_is_a_trailing_mean():
    assert smooth([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    assert smooth([2.0], 5) == [2.0]


def test_k_ticks_are_integers_up_to_the_largest_k():
    from vpo_core.evaluation.plots import k_ticks

    assert k_ticks(30) == [1, 2, 3, 5, 10, 20, 30]
    assert k_ticks(12) == [1, 2, 3, 5, 10, 12]
    assert k_ticks(1) == [1]


def test_plots_highlight_the_method_of_interest_with_integer_k_labels(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vpo_core.evaluation.plots import integer_k_axis, line_style

    vpo, grpo = line_style("vpo (5 seeds)", 0), line_style("grpo", 0)
    assert vpo["linewidth"] > 2 * grpo["linewidth"]
    assert vpo["zorder"] > grpo["zorder"]
    assert line_style("vpo:w_star", 3)["color"] == vpo["color"] != line_style("maxrl", 3)["color"]
    fig, ax = plt.subplots()
    ax.plot(range(1, 31), range(30))
    integer_k_axis(ax, 30)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    plt.close(fig)
    assert labels == ["1", "2", "3", "5", "10", "20", "30"]
