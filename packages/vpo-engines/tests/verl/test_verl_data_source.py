"""A veRL launch records where the env's data came from beside the exported parquet files."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("verl", reason="veRL is opt-in: `uv sync --group verl` (CI installs it)")
pytestmark = pytest.mark.verl

from vpo_engines.verl import launch  # noqa: E402


def test_launch_writes_the_env_data_source(tmp_path):
    p, dry_run = launch.plan(["env=maze-v1", "method=vpo", f"out={tmp_path / 'out'}", "env.test_size=5"])
    assert not dry_run
    p.train_file.parent.mkdir(parents=True)
    launch._write_data_source(p)
    recorded = json.loads((p.train_file.parent / "data_source.json").read_text())
    assert recorded == {}  # maze generates its tasks: nothing to pin


def test_launch_writes_a_dataset_envs_files_and_revision(tmp_path):
    from pathlib import Path

    fixtures = Path(__file__).parents[3] / "env-musique" / "tests" / "data"
    if not fixtures.exists():
        pytest.skip("env-musique fixtures not in this checkout")
    p, _ = launch.plan(["env=musique-v1", "method=grpo", f"out={tmp_path}", f"env.data_dir={fixtures}"])
    p.train_file.parent.mkdir(parents=True)
    launch._write_data_source(p)
    recorded = json.loads((p.train_file.parent / "data_source.json").read_text())
    assert recorded, "a dataset env must say where its data came from"
    assert str(fixtures) in json.dumps(recorded)
