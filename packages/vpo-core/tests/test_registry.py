"""Env discovery: lazy list, one import per make, loud failures, close-match hints."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import vpo_core
from vpo_core.registry import resolve_env_class

IMPLEMENTED_ENVS = {"maze-v1", "musique-v1", "eureqa-v1", "toolrl-v1", "lcb-v1"}


def _run(code: str, extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    prelude = f"import sys; sys.path.insert(0, {str(extra_path)!r})\n" if extra_path else ""
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def _fake_distribution(root: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    dist = root / f"{name}-0.0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    lines = "\n".join(f"{k} = {v}" for k, v in entry_points.items())
    (dist / "entry_points.txt").write_text(f"[vpo.envs]\n{lines}\n")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))


def test_list_envs_lists_every_implemented_env():
    assert set(vpo_core.list_envs()) >= IMPLEMENTED_ENVS


def test_list_envs_imports_nothing_and_make_imports_one_package():
    result = _run(
        """
        import json, sys, vpo_core
        ids = vpo_core.list_envs()
        before = sorted(m for m in sys.modules if m.startswith("env_"))
        vpo_core.make("maze-v1")
        after = sorted(m.split(".")[0] for m in sys.modules if m.startswith("env_"))
        heavy = sorted(m for m in ("torch", "datasets", "verl", "transformers") if m in sys.modules)
        print(json.dumps({"before": before, "after": sorted(set(after)), "heavy": heavy}))
        """
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {"before": [], "after": ["env_maze"], "heavy": []}


def test_unknown_id_lists_installed_and_suggests_close_match():
    with pytest.raises(
        KeyError, match=r"unknown env id 'maze-v2'.*Did you mean 'maze-v1'.*Installed envs: .*toolrl-v1"
    ):
        vpo_core.make("maze-v2")
    with pytest.raises(KeyError, match="non-empty string"):
        vpo_core.make("")


def test_unversioned_name_resolves_to_latest_and_module_path_works():
    assert resolve_env_class("maze").env_id == "maze-v1"
    assert resolve_env_class("env_maze:MazeEnv") is resolve_env_class("maze-v1")
    with pytest.raises(TypeError, match=r"not a vpo_core\.TextEnv subclass"):
        resolve_env_class("vpo_core.spec:RewardSpec")


def test_broken_plugin_raises_instead_of_being_skipped(tmp_path):
    _fake_distribution(
        tmp_path,
        "env-broken",
        {"broken-v1": "env_broken:BrokenEnv"},
        {"env_broken": "raise ImportError('env_broken needs a missing dependency')\n"},
    )
    result = _run("import vpo_core\nprint(vpo_core.list_envs())\nvpo_core.make('broken-v1')", tmp_path)
    assert "broken-v1" in result.stdout
    assert result.returncode != 0
    assert "env_broken needs a missing dependency" in result.stderr


def test_mismatched_env_id_and_duplicate_ids_are_rejected(tmp_path):
    _fake_distribution(
        tmp_path,
        "env-liar",
        {"liar-v1": "env_liar:LiarEnv", "maze-v1": "env_liar:LiarEnv"},
        {
            "env_liar": """
            from vpo_core import TextEnv
            class LiarEnv(TextEnv):
                env_id = "something-else"
            """
        },
    )
    result = _run("import vpo_core\nvpo_core.list_envs()", tmp_path)
    assert result.returncode != 0
    assert "registered twice" in result.stderr
    assert "env-liar" in result.stderr
    (tmp_path / "env-liar-0.0.1.dist-info" / "entry_points.txt").write_text("[vpo.envs]\nliar-v1 = env_liar:LiarEnv\n")
    result = _run("import vpo_core\nvpo_core.make('liar-v1')", tmp_path)
    assert result.returncode != 0
    assert "env_id is 'something-else' but it is registered as 'liar-v1'" in result.stderr
