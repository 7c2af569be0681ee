"""A CLI that answers at once (issue 24): options, env ids, env options, trackers and the model are
checked before torch or the engine loads; a refused or failed start leaves no run directory behind;
``config=PATH`` replays a saved run; report files are strict JSON."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vpo_core import strict_json
from vpo_core.cli_config import ConfigError
from vpo_engines.local import warmup as warmup_module
from vpo_engines.local.config import TrainConfig, parse_overrides
from vpo_engines.local.train import main as train_main
from vpo_engines.local.train import preflight, run

TRAIN_APP = Path(__file__).resolve().parents[4] / "apps" / "train.py"
_PROBE = """
import runpy, sys
sys.argv = ["apps/train.py", *sys.argv[1:]]
try:
    runpy.run_path({app!r}, run_name="__main__")
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("torch", "transformers", "vpo_engines.local.rl") if m in sys.modules)
print("HEAVY=" + ",".join(heavy), "CODE=" + str(code), file=sys.stderr)
"""


def _probe(*args: str, cwd: Path) -> tuple[str, str]:
    """Run apps/train.py in a fresh interpreter; (stdout, stderr) with the heavy modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(app=str(TRAIN_APP)), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )
    return done.stdout, done.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--help"], "CODE=0"),
        (["stepz=2"], "did you mean steps"),
        (["--steps=2"], "write steps=2, not '--steps=2'"),
        (["--steps", "2"], "write steps=2"),
        (["env.foo=1"], "env.foo is not an option of maze-v1"),
        (["env=mazee"], "unknown env id 'mazee'"),
        (["steps=[2"], "option steps expects an integer"),
        (["model=/no/such/model"], "model=/no/such/model is not a directory"),
    ],
)
def test_help_and_refusals_come_before_torch(args, needle, tmp_path):
    out, err = _probe(*args, f"out={tmp_path / 'run'}", cwd=tmp_path)
    assert needle in out + err
    assert "HEAVY= " in err, err  # nothing heavy imported
    assert "Traceback" not in err
    assert args == ["--help"] or "CODE=2" in err
    assert not (tmp_path / "run").exists()
    assert not (tmp_path / "runs").exists()


def test_unversioned_env_resolves_to_the_canonical_id_with_a_warning(capsys):
    config = preflight(parse_overrides(["env=maze"]))
    assert config.env == "maze-v1"
    assert config.run_dir == Path("runs") / "maze-v1-vpo-seed0"
    assert "env=maze has no version; using the latest installed, env=maze-v1" in capsys.readouterr().err
    assert preflight(parse_overrides(["env=maze-v1"])).env == "maze-v1"


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        ("env.train_sise=20", "did you mean env.train_size?"),
        ("env.train_size=abc", "env.train_size of maze-v1 expects int, got 'abc'"),
        ("env.train_size=true", "expects int"),
    ],
)
def test_env_options_are_checked_against_the_constructor(option, needle):
    with pytest.raises(ValueError, match=needle.replace("?", r"\?")):
        preflight(parse_overrides([option]))


def test_text_env_options_given_numbers_become_text():
    config = preflight(parse_overrides(["env=musique-v1", "env.data_dir=2024"]))
    assert config.env_options == {"data_dir": "2024"}


def test_a_missing_tracker_is_refused_before_the_run_directory(tmp_path, monkeypatch, capsys, tiny_run):
    monkeypatch.setitem(sys.modules, "wandb", None)
    assert train_main([*tiny_run, "logger=console,wandb", f"out={tmp_path / 'run'}"]) == 2
    assert "logger=wandb needs the wandb package" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_failed_start_leaves_no_run_directory_and_the_retry_runs(tmp_path, monkeypatch, tiny_run):
    out = tmp_path / "run"

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(warmup_module, "warm_up", broken)
    with pytest.raises(KeyboardInterrupt):
        run(parse_overrides([*tiny_run, "steps=0", f"out={out}"]))
    assert not out.exists()
    monkeypatch.undo()
    # other settings: not blocked by a stale folder
    run(parse_overrides([*tiny_run, "steps=0", "seed=1", f"out={out}"]))
    assert (out / "init_model").is_dir()
    assert json.loads((out / "config.json").read_text())["seed"] == 1


def test_config_replays_a_saved_run(tmp_path):
    saved = TrainConfig(method="grpo", steps=7, lr=3e-4, env_options={"train_size": 20}, out="runs/x").to_json()
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**saved, "data_source": {"kind": "generated"}}))
    replayed = parse_overrides([f"config={path}", "steps=9", "env.test_size=4"])
    assert (replayed.method, replayed.steps, replayed.lr, replayed.out) == ("grpo", 9, 3e-4, "runs/x")
    assert replayed.env_options == {"train_size": 20, "test_size": 4}
    assert parse_overrides([f"config={path}"]).identity() == TrainConfig(**saved).identity()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "no such file"),
        ("{", "not a readable JSON file"),
        ("[1]", "not a JSON object"),
        ('{"stepz": 3}', "not options: stepz"),
        ('{"steps": "many"}', "option steps expects an integer"),
    ],
)
def test_bad_replayed_configs_are_one_line_errors(tmp_path, content, needle):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=needle) as info:
        parse_overrides([f"config={path}"])
    assert "\n" not in str(info.value)


def test_strict_json_writes_null_for_undefined_numbers(tmp_path):
    import numpy as np

    value = {"rho": float("nan"), "inf": np.float64("inf"), "k": np.arange(3), "ok": np.float32(0.5), "b": True}
    text = strict_json.dumps(value)
    assert json.loads(text) == {"rho": None, "inf": None, "k": [0, 1, 2], "ok": 0.5, "b": True}
    assert "NaN" not in text
    assert "Infinity" not in text
    strict_json.write(tmp_path / "r.json", [math.nan])
    assert json.loads((tmp_path / "r.json").read_text()) == [None]


def test_sigterm_during_the_start_leaves_no_run_directory(tmp_path, tiny_run):
    """`kill` (SIGTERM) during the warm-up unwinds like Ctrl-C: exit 143, the fresh folder removed."""
    out = tmp_path / "run"
    args = [*tiny_run, "warmup_steps=1000000", "steps=0", f"out={out}"]
    process = subprocess.Popen([sys.executable, str(TRAIN_APP), *args], stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 300
        while not (out / "config.json").exists():  # the run directory exists: the warm-up is under way
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "the run stopped before its warm-started model was saved" in err
    assert not out.exists()
