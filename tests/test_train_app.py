"""apps/train.py: engine dispatch and its error message."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

TRAIN = Path(__file__).resolve().parents[1] / "apps" / "train.py"


def _module():
    return runpy.run_path(str(TRAIN), run_name="train_app")


def test_engine_is_split_from_the_rest():
    split_engine = _module()["split_engine"]
    assert split_engine(["env=maze-v1", "engine=verl", "--dry-run"]) == ("verl", ["env=maze-v1", "--dry-run"])
    assert split_engine([]) == ("local", [])


def test_unknown_engine_names_the_valid_ones():
    with pytest.raises(SystemExit, match="unknown engine 'ray'; choose one of local, verl"):
        _module()["main"](["engine=ray"])
