"""``vpo diagnose`` (apps/diagnose.py is its alias): verdicts and the paper's table from saved pools; clear errors."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from vpo_core.evaluation import SavedPool, save_pool
from vpo_engines.cli import main as vpo


def _app():
    return lambda argv: vpo(["diagnose", *argv])


def test_app_prints_verdicts_and_table(tmp_path, capsys):
    rng = np.random.default_rng(5)
    save_pool(tmp_path / "pool_vpo.npy", SavedPool(rng.uniform(size=(4, 6, 3, 4)), mode="multi"))
    save_pool(tmp_path / "pool_grpo.npy", SavedPool(rng.uniform(size=(4, 16, 1, 4)), mode="single"))
    rc = _app()(["env=maze-v1", f"vpo={tmp_path / 'pool_vpo.npy'}", f"grpo={tmp_path / 'pool_grpo.npy'}"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "in VPO's regime" in out
    assert "| maze-v1 | 4 dims (D=4) |" in out
    assert "best@16 (w* = (0.25, 0.25, 0.25, 0.25))" in out


def test_app_rejects_a_missing_file_and_a_wrong_env(tmp_path, capsys):
    assert _app()(["env=maze-v1", f"vpo={tmp_path / 'nope.npy'}"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert _app()(["env=maze-v9", f"vpo={tmp_path / 'nope.npy'}"]) == 2  # one line, no traceback
    assert "unknown env id 'maze-v9'" in capsys.readouterr().err
    np.save(tmp_path / "pool_x.npy", np.zeros((2, 3, 1, 4)))  # a bare array: the format before metadata
    assert _app()(["env=maze-v1", f"pools={tmp_path / 'pool_x.npy'}"]) == 2
    assert "pool_x.npy is a pool without its metadata" in capsys.readouterr().err
    save_pool(tmp_path / "pool_x.npy", SavedPool(np.zeros((2, 3, 1, 5)), mode="single"))
    assert _app()(["env=maze-v1", f"pools={tmp_path / 'pool_x.npy'}"]) == 2
    assert "reward dims" in capsys.readouterr().err
    save_pool(tmp_path / "pool_x.npy", SavedPool(np.full((2, 3, 1, 4), np.nan), mode="single"))
    assert _app()(["env=maze-v1", f"pools={tmp_path / 'pool_x.npy'}"]) == 2
    assert f"{tmp_path / 'pool_x.npy'}: pool holds NaN" in capsys.readouterr().err


def test_a_bug_inside_the_diagnosis_is_a_traceback_not_a_one_line_message(tmp_path, monkeypatch):
    from vpo_engines import diagnose

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(diagnose, "diagnose_pool", broken)
    save_pool(tmp_path / "pool_vpo.npy", SavedPool(np.zeros((2, 3, 3, 4)), mode="multi"))
    with pytest.raises(ValueError, match="could not be broadcast"):
        _app()(["env=maze-v1", f"vpo={tmp_path / 'pool_vpo.npy'}"])


def test_a_checkpoint_is_sampled_by_the_evaluation_app(tmp_path, capsys, monkeypatch):
    import json
    import subprocess

    calls = []

    def fake_evaluate(command, check, stdout=None):
        calls.append(command)
        assert command[:4] == [sys.executable, "-m", "vpo_core", "eval"]  # `vpo eval` in its own process
        args = dict(a.split("=", 1) for a in command[4:])
        out = Path(args["out"])
        out.mkdir(parents=True)
        save_pool(out / "pool_run.npy", SavedPool(np.random.default_rng(6).uniform(size=(3, 16, 1, 4)), mode="single"))
        row = {"pool": "pool_run.npy", "conditioning": None}  # the fields of results.json's schema it reads
        (out / "results.json").write_text(json.dumps({"schema_version": 2, "rows": {"run": row}}))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_evaluate)
    rc = _app()(["env=maze-v1", "grpo=runs/some-grpo-run", f"out={tmp_path}", "evaluate=tasks=3 samples=16"])
    assert rc == 0
    [command] = calls
    assert "checkpoints=runs/some-grpo-run" in command
    assert f"out={tmp_path / 'grpo'}" in command
    assert command[-2:] == ["tasks=3", "samples=16"]
    assert "| maze-v1 | 4 dims (D=4) | – |" in capsys.readouterr().out
