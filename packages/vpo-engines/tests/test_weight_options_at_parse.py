"""Every engine refuses a Dirichlet/Sobol setting the estimator cannot honour when its options are read (issue 37).

Before, a bad ``alpha`` or a K whose arrays need terabytes passed the engines' option checks and failed at the
first RL step (after the warm-up), or not at all. Each engine's config now calls `check_weight_options`.
"""

from __future__ import annotations

import pytest

from vpo_core.errors import ConfigError
from vpo_engines.local.config import parse_overrides

BAD = [
    (["alpha=1e300"], "alpha"),
    (["weight_sampler=sobol", "alpha=1e8"], "alpha"),
    (["num_weights=1000000000000"], "GiB"),
]


@pytest.mark.parametrize(("options", "named"), BAD)
def test_the_local_engine_refuses_bad_weight_options_when_it_reads_them(options, named):
    with pytest.raises(ConfigError, match=named):
        parse_overrides(options)


def test_the_local_engine_keeps_the_defaults():
    config = parse_overrides(["alpha=0.5", "num_weights=64", "weight_sampler=sobol"])
    assert (config.alpha, config.num_weights, config.weight_sampler) == (0.5, 64, "sobol")


@pytest.mark.parametrize(("options", "named"), BAD)
def test_trl_refuses_bad_weight_options_when_it_reads_them(options, named):
    from vpo_core.cli_config import parse_config
    from vpo_engines.trl.train import TRLTrainConfig

    with pytest.raises(ConfigError, match=named):
        parse_config(TRLTrainConfig, options, prog="trl")


@pytest.mark.parametrize(("options", "named"), BAD[:2])
def test_the_verl_launcher_refuses_bad_weight_options_before_composing(options, named, capsys):
    pytest.importorskip("hydra", reason="the veRL launcher composes with hydra: `uv sync --group verl`")
    from vpo_engines.verl.launch import main

    assert main(["env=maze-v1", "method=vpo", *options]) != 0
    assert named in capsys.readouterr().err
