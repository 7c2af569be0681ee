"""The local engine's weight_sampler option: parsed, checked before anything runs, and part of a run's identity."""

from __future__ import annotations

import json

import pytest

from vpo_core.errors import RunDirError
from vpo_engines.local.config import parse_overrides
from vpo_engines.local.train import main as train_main
from vpo_engines.local.train import run
from vpo_engines.runs import RunDir


@pytest.fixture
def tiny(micro_run):
    """The micro run with 4 weightings per VPO group."""
    return [*micro_run, "num_weights=4"]


def test_weight_sampler_is_parsed_and_kept_in_the_identity():
    config = parse_overrides(["weight_sampler=sobol"])
    assert config.weight_sampler == "sobol"
    assert config.identity()["weight_sampler"] == "sobol"
    assert parse_overrides([]).identity()["weight_sampler"] == "dirichlet"


def test_an_unknown_weight_sampler_is_refused_before_anything_runs(tmp_path, capsys):
    assert train_main(["weight_sampler=halton", f"out={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert "weight_sampler must be one of ('dirichlet', 'sobol')" in err
    assert not (tmp_path / "run").exists()


def test_a_sobol_run_resumed_without_the_option_is_refused_naming_both_values(tmp_path, capsys, tiny):
    """Before issue 37 the resume silently went on with Dirichlet weights."""
    out = tmp_path / "run"
    run(parse_overrides([*tiny, "weight_sampler=sobol", "steps=1", f"out={out}"]))
    with pytest.raises(RunDirError, match=r"weight_sampler='sobol' in the run, weight_sampler='dirichlet' now"):
        run(parse_overrides([*tiny, "steps=2", f"out={out}"]))
    assert train_main([*tiny, "steps=2", f"out={out}"]) == 2
    assert "weight_sampler='sobol' in the run" in capsys.readouterr().err
    assert [r["step"] for r in RunDir(out).read_metrics()] == [0]  # nothing ran under the wrong sampler
    run(parse_overrides([*tiny, "weight_sampler=sobol", "steps=2", f"out={out}"]))  # repeating it resumes
    assert [r["step"] for r in RunDir(out).read_metrics()] == [0, 1]
    assert json.loads(RunDir(out).config_file.read_text())["weight_sampler"] == "sobol"


def test_a_dirichlet_run_is_not_resumed_as_sobol_and_old_configs_count_as_dirichlet(tmp_path, tiny):
    out = tmp_path / "run"
    run(parse_overrides([*tiny, "steps=1", f"out={out}"]))
    with pytest.raises(RunDirError, match=r"weight_sampler='dirichlet' in the run, weight_sampler='sobol' now"):
        run(parse_overrides([*tiny, "weight_sampler=sobol", "steps=2", f"out={out}"]))
    saved = json.loads(RunDir(out).config_file.read_text())
    del saved["weight_sampler"]  # a run saved before the option existed drew Dirichlet weights
    RunDir(out).config_file.write_text(json.dumps(saved))
    run(parse_overrides([*tiny, "steps=2", f"out={out}"]))
    assert [r["step"] for r in RunDir(out).read_metrics()] == [0, 1]
    RunDir(out).config_file.write_text(json.dumps({k: v for k, v in saved.items() if k != "weight_sampler"}))
    with pytest.raises(RunDirError, match="weight_sampler='dirichlet' in the run"):
        run(parse_overrides([*tiny, "weight_sampler=sobol", "steps=3", f"out={out}"]))
