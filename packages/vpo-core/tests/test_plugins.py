"""Methods and weight samplers of other packages, found through entry points (`vpo_core.plugins`).

Each test installs a tiny distribution (a ``*.dist-info`` with ``entry_points.txt`` and a module) in a
temporary folder and runs a fresh interpreter with that folder on its path, as an installed package would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vpo_core.advantages import AdvantageConfig
from vpo_core.errors import ConfigError
from vpo_core.methods import METHODS, get_method
from vpo_core.weights import WEIGHT_SAMPLERS, check_weight_sampler

REPO = Path(__file__).resolve().parents[3]

BEST_OF_M = """
import numpy as np
from vpo_core.methods import register_method, register_objective

@register_objective("best_w_star")
def best_w_star(rewards, inputs):
    return (rewards @ inputs.w_star).max(axis=-1)  # (B, G, m) -> (B, G): the best answer under w*

BEST_OF_M = register_method("best_of_m", mode="multi", m=2, objective="best_w_star", normalizer="zscore",
                            description="z-scored best-of-m w*·r")
"""

CENTRE = """
import numpy as np
from vpo_core.weights import WeightSampler

def draw(d, k, keys, streams, alpha):
    return np.full((len(keys), k, d), 1.0 / d)  # every weight vector is the simplex's centre

CENTRE = WeightSampler(name="centre", draw=draw, draw_bytes=lambda d, k, groups: 8 * d * k * groups,
                       description="centre points")
"""


def _install(root: Path, name: str, groups: dict[str, dict[str, str]], modules: dict[str, str]) -> Path:
    dist = root / f"{name.replace('-', '_')}-0.0.1.dist-info"  # the wheel spelling: the stem before "-" is the name
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    text = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in groups.items())
    (dist / "entry_points.txt").write_text(text)
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root


def _python(code: str, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=path,
    )


def test_a_method_and_a_sampler_of_another_package_are_found_without_importing_it(tmp_path):
    _install(
        tmp_path,
        "vpo-bestof",
        {"vpo.methods": {"best_of_m": "vpo_bestof:BEST_OF_M"}, "vpo.weight_samplers": {"centre": "vpo_centre:CENTRE"}},
        {"vpo_bestof": BEST_OF_M, "vpo_centre": CENTRE},
    )
    result = _python(
        """
        import json, sys
        import numpy as np
        from vpo_core import METHODS, AdvantageConfig, RolloutBatch, compute_advantages, get_method
        from vpo_core.weights import WEIGHT_SAMPLERS, check_weight_options
        listed = {"methods": "best_of_m" in METHODS and "best_of_m" in sorted(METHODS),
                  "samplers": list(WEIGHT_SAMPLERS)}
        imported_by_listing = [m for m in ("vpo_bestof", "vpo_centre") if m in sys.modules]
        method = get_method("best_of_m")
        rewards = np.array([[[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.5]]]])  # (B=1, G=2, m=2, d=2)
        best = compute_advantages(RolloutBatch.of(rewards, w_star=[0.5, 0.5]), AdvantageConfig.parse("best_of_m")).tolist()
        check_weight_options(1.0, 8, "centre")
        import dataclasses
        from vpo_engines.local.config import TrainConfig, parse_overrides
        config = parse_overrides(["method=best_of_m", "weight_sampler=centre"])  # the engine reads both registries
        helps = {f.name: f.metadata["help"] for f in dataclasses.fields(TrainConfig)}
        listed["engine"] = [config.method, config.weight_sampler, "centre" in helps["weight_sampler"]]
        r = np.random.default_rng(0).uniform(size=(3, 4, 2, 2))
        batch = RolloutBatch.of(r, w_star=[0.5, 0.5])
        centre = compute_advantages(batch, AdvantageConfig.parse("vpo", num_weights=8, weight_sampler="centre"))
        scalar = compute_advantages(batch, AdvantageConfig.parse("best_of_m"))
        print(json.dumps({**listed, "imported_by_listing": imported_by_listing, "mode": method.mode,
                          "m": method.m, "best": best, "centre_is_best_of_m": bool(np.allclose(centre, scalar))}))
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["methods"] is True
    assert seen["engine"] == ["best_of_m", "centre", True]
    assert seen["samplers"] == ["dirichlet", "centre", "sobol"]  # the built-in first, then the others sorted
    assert seen["imported_by_listing"] == []  # names come from metadata; the module loads on first lookup
    assert (seen["mode"], seen["m"]) == ("multi", 2)
    np.testing.assert_allclose(seen["best"], [[1.0, -1.0]], atol=1e-4)  # best answers 0.5 and 0.25, z-scored
    assert seen["centre_is_best_of_m"] is True  # K centre weights: vpo's set reward is best-of-m under w = 1/d


def test_apps_train_runs_a_method_installed_through_an_entry_point(tmp_path):
    _install(tmp_path, "vpo-bestof", {"vpo.methods": {"best_of_m": "vpo_bestof:BEST_OF_M"}}, {"vpo_bestof": BEST_OF_M})
    out = tmp_path / "run"
    tiny = [
        *("hidden_size=32", "layers=1", "heads=2", "vocab_size=400", "warmup_steps=1", "warmup_batch=2"),
        *("prompts_per_step=2", "group_size=2", "eval_tasks=0", "threads=1", "env.train_size=4", "env.test_size=2"),
    ]
    code = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
    result = _python(
        code, tmp_path, str(REPO / "apps" / "train.py"), "method=best_of_m", "steps=1", f"out={out}", *tiny
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out / "config.json").read_text())["method"] == "best_of_m"
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize(
    ("entry", "module", "message"),
    [
        ("vpo = vpo_bad:X", "X = 1", "'vpo' is built into vpo-core"),
        ("liar = vpo_bad:LIAR", BEST_OF_M + "LIAR = BEST_OF_M", "whose name is 'best_of_m'"),
        ("silent = vpo_bad", "x = 1", "registered no method 'silent'"),
        ("number = vpo_bad:X", "X = 1", "must name a Method or a module"),
        ("broken = vpo_bad", "raise ImportError('vpo_bad needs a missing dependency')", "missing dependency"),
    ],
)
def test_a_bad_method_entry_point_is_an_error_naming_it(tmp_path, entry, module, message):
    name, _, value = entry.partition(" = ")
    _install(tmp_path, "vpo-bad", {"vpo.methods": {name: value}}, {"vpo_bad": module})
    # a lookup loads the entry point; listing the names (every engine's --help does) checks them all
    result = _python(f"from vpo_core import METHODS, get_method\nget_method({name!r})\nlist(METHODS)", tmp_path)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def test_sobol_without_vpo_lab_names_the_package_to_install(monkeypatch):
    monkeypatch.setattr(WEIGHT_SAMPLERS, "entry_points", dict)  # as if vpo-lab were not installed
    monkeypatch.delitem(WEIGHT_SAMPLERS._entries, "sobol", raising=False)
    with pytest.raises(
        ConfigError, match=r"one of \('dirichlet',\), got 'sobol'; the sobol sampler comes with vpo-lab: "
    ):
        check_weight_sampler("sobol")
    with pytest.raises(ConfigError, match=r"install it \(pip install vpo-lab\)"):
        AdvantageConfig.parse("vpo", weight_sampler="sobol")


def test_two_distributions_claiming_one_name_are_refused(tmp_path):
    _install(tmp_path, "vpo-one", {"vpo.weight_samplers": {"centre": "vpo_centre:CENTRE"}}, {"vpo_centre": CENTRE})
    _install(tmp_path, "vpo-two", {"vpo.weight_samplers": {"centre": "vpo_other:CENTRE"}}, {})
    result = _python("from vpo_core.weights import WEIGHT_SAMPLERS\nprint(list(WEIGHT_SAMPLERS))", tmp_path)
    assert result.returncode != 0
    assert "weight sampler 'centre' is registered twice" in result.stderr
    assert "vpo-one" in result.stderr
    assert "vpo-two" in result.stderr


def test_vpo_labs_sampler_comes_through_its_entry_point_and_unknown_names_list_the_installed():
    ep = WEIGHT_SAMPLERS.entry_points()["sobol"]
    assert (ep.value, ep.dist.name if ep.dist else None) == ("vpo_lab.qmc:SOBOL", "vpo-lab")
    assert WEIGHT_SAMPLERS["sobol"].description == "scrambled Sobol points"
    with pytest.raises(ValueError, match=r"weight_sampler must be one of \('dirichlet', 'sobol'\), got 'halton'\.$"):
        check_weight_sampler("halton")
    with pytest.raises(ValueError, match=r"unknown method 'ppo'.*'vpo\.methods' entry point"):
        get_method("ppo")
    assert "ppo" not in METHODS
    assert 3 not in METHODS
    with pytest.raises(ValueError, match="already registered"):
        METHODS.register("vpo", METHODS["vpo"])
