"""apps/mechanism.py: a tiny study end to end (tables and JSON written), and clear option errors."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "apps" / "mechanism.py"


def _app():
    if "mechanism_app" not in sys.modules:  # registered: the config dataclass resolves its annotations there
        spec = importlib.util.spec_from_file_location("mechanism_app", APP)
        module = importlib.util.module_from_spec(spec)
        sys.modules["mechanism_app"] = module
        spec.loader.exec_module(module)
    return sys.modules["mechanism_app"].main


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
