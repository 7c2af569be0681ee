"""apps/mechanism.py: a tiny study end to end (tables and JSON written), and clear option errors."""

from __future__ import annotations

import json
from pathlib import Path

from vpo_core.testing import load_script

APP = Path(__file__).resolve().parents[1] / "apps" / "mechanism.py"


def _app():
    return load_script(APP, "mechanism_app").main


def test_tiny_study_writes_tables_and_json(tmp_path, capsys):
    args = ["tasks=2", "seeds=2", "steps=4", "checkpoints=0,4", "methods=grpo,vpo", "starts=warm_hard",
            "candidates=60", f"out={tmp_path}"]  # fmt: skip
    assert _app()(args) == 0
    data = json.loads((tmp_path / "warm_hard_V3.json").read_text())
    assert data["config"]["seeds"] == [0, 1]
    assert data["config"]["task_ids"] == ["maze-v1/test/0", "maze-v1/test/1"]
    cell = data["summary"]["vpo"]["4"]
    assert len(cell["best_at_k"]) == 30
    assert cell["best_at_k"][0]["low"] <= cell["best_at_k"][0]["high"]
    assert set(data["vpo_minus"]["4"]["best@3"]) == {"grpo"}
    table = (tmp_path / "warm_hard_V3.md").read_text()
    assert "## Step 4" in table
    assert "| vpo | " in table
    assert "uv run apps/mechanism.py tasks=2" in table


def test_bad_options_are_named(capsys):
    assert _app()(["starts=cold"]) == 2
    assert "unknown start" in capsys.readouterr().err
    assert _app()(["steps=10", "checkpoints=0,20"]) == 2
    assert "checkpoints must lie in" in capsys.readouterr().err
    assert _app()(["methods=grpo,nope", "tasks=1", "steps=1", "checkpoints=0,1"]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err


def test_options_that_would_fail_later_are_refused_at_parse_time(capsys, tmp_path):
    # Each of these used to be accepted and fail after the tables were built (group_size=1, a candidate
    # count that is no whole number of chains or pools), train on NaN (lr=nan), or try to allocate
    # terabytes (candidates=3*10**9). Refused before any env is made, naming the limit.
    cases = [
        (["group_size=1"], "group_size must lie in [2, 4096]"),
        (["group_size=100000"], "group_size must lie in [2, 4096]"),
        (["lr=nan"], "lr (Adam step size) must be a finite number > 0, got lr=nan"),
        (["lr=inf"], "must be a finite number > 0"),
        (["lr=0"], "must be a finite number > 0"),
        (["candidates=3000000000"], "candidates must be a multiple of 30"),
        (["candidates=0"], "in [30, 30000]"),
        (["candidates=-30"], "in [30, 30000]"),
        (["candidates=100"], "candidates must be a multiple of 30"),
        (["methods=grpo", "candidates=45"], "candidates must be a multiple of 30"),
    ]
    for args, message in cases:
        assert _app()([*args, f"out={tmp_path / 'x'}"]) == 2, args
        err = capsys.readouterr().err
        assert message in err, (args, err)
        assert err.count("\n") == 1
        assert "Traceback" not in err
    assert not (tmp_path / "x").exists()
