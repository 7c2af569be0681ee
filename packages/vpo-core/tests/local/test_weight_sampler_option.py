"""The local engine's weight_sampler option: parsed, checked before anything runs, and part of a run's identity."""

from __future__ import annotations

from vpo_core.adapters.local.config import parse_overrides
from vpo_core.adapters.local.train import main as train_main


def test_weight_sampler_is_parsed_and_kept_in_the_identity():
    config = parse_overrides(["weight_sampler=sobol"])
    assert config.weight_sampler == "sobol"
    assert config.identity()["weight_sampler"] == "sobol"
    # the default leaves the identity as it was before the option existed, so earlier runs still resume
    assert "weight_sampler" not in parse_overrides([]).identity()


def test_an_unknown_weight_sampler_is_refused_before_anything_runs(tmp_path, capsys):
    assert train_main(["weight_sampler=halton", f"out={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert "weight_sampler must be one of ('dirichlet', 'sobol')" in err
    assert not (tmp_path / "run").exists()
