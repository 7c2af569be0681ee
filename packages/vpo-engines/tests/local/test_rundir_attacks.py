"""A run directory is data, never code, and a damaged one is one clear line (issue 37).

* ``state.pt`` (checkpoint and warm-up) is read with ``torch.load(weights_only=True)``: a pickle whose
  ``__reduce__`` would run something is refused with a `RunDirError` and never runs;
* evaluations are keyed by their settings: a resume with other ``eval_tasks``/``eval_samples``/
  ``eval_seeds`` evaluates again instead of reporting the old numbers under the new header;
* a damaged evaluation file, truncated weights and a file where a folder belongs are named with what
  to do; ``apps/evaluate.py`` on lcb-v1 without data says how to get it.
"""

from __future__ import annotations

import json
import pathlib
from pathlib import Path
from typing import Any

import pytest
import torch

from vpo_core.errors import MissingDataError
from vpo_engines.evaluate import main as evaluate_main
from vpo_engines.local.config import parse_overrides
from vpo_engines.local.train import main as train_main
from vpo_engines.local.train import run
from vpo_engines.runs import RunDir, RunDirError


@pytest.fixture(scope="module")
def tiny(micro_run):
    """The micro run with 2 warm-up steps, 4 weightings per VPO group and 3 test tasks (later values win)."""
    return [*micro_run, "warmup_steps=2", "num_weights=4", "env.test_size=3"]


class WritesAFile:
    """Unpickling this calls ``Path.touch(target)``: what a hostile run directory would run instead."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (pathlib.Path.touch, (self.target,))


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny):
    """A run with a checkpoint after 1 RL step (copied per test)."""
    out = tmp_path_factory.mktemp("runs") / "run"
    run(parse_overrides([*tiny, "steps=1", f"out={out}"]))
    return out


def _copy(trained: Path, tmp_path: Path) -> Path:
    import shutil

    shutil.copytree(trained, tmp_path / "run")
    return tmp_path / "run"


# ------------------------------------------------------------------------------ pickles never run
def test_a_checkpoint_state_holding_code_is_refused_and_never_runs(trained, tmp_path, capsys, tiny):
    out = _copy(trained, tmp_path)
    rd = RunDir(out)
    target = tmp_path / "pwned"
    good = rd.load_state(step=1)
    torch.save({**good, "extra": WritesAFile(target)}, rd.state_file)
    with pytest.raises(RunDirError, match=r"state\.pt holds objects other than tensors and plain data") as caught:
        rd.load_state(step=1)
    assert f"delete {rd.checkpoint}" in str(caught.value)
    assert not target.exists()
    assert train_main([*tiny, "steps=2", f"out={out}"]) == 2  # the resume: one line, nothing run
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ")
    assert "not loaded" in err[-1]
    assert not any("Traceback" in line for line in err)
    assert not target.exists()


def _stopped_warmup(rd: RunDir) -> dict[str, Any]:
    """Make `rd` hold a warm-up checkpoint's folder and manifest (stopped after its save at step 2).

    Returns:
        The plain-data training state such a warm-up saves (the caller writes it, as is or tampered with).
    """
    rd.warmup_checkpoint.mkdir(parents=True)
    (rd.warmup_checkpoint / "manifest.json").write_text('{"step": 2}')
    return {
        "step": 2,
        "optimizer": {"state": {}, "param_groups": []},
        "schedule": {},
        "rng": {"bit_generator": "PCG64", "state": {"state": 1, "inc": 3}, "has_uint32": 0, "uinteger": 0},
        "torch_rng": torch.get_rng_state(),
        "losses": [1.0, 0.5],
    }


def test_a_warmup_state_holding_code_is_refused_and_never_runs(tmp_path):
    rd = RunDir(tmp_path / "run")
    state = _stopped_warmup(rd)  # a warm-up stopped after its save at step 2 ...
    torch.save(state, rd.warmup_checkpoint / "state.pt")
    assert torch.load(rd.warmup_checkpoint / "state.pt", weights_only=True)["step"] == 2  # plain data loads
    torch.save({**state, "hook": WritesAFile(tmp_path / "pwned")}, rd.warmup_checkpoint / "state.pt")  # ... tampered
    with pytest.raises(RunDirError, match=r"holds objects other than tensors .* delete .*warmup"):
        rd.read_warmup()
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "change",
    [{"losses": [1.0]}, {"torch_rng": torch.zeros(3)}, {"rng": {"bit_generator": "nope"}}, {"optimizer": [1]}],
)
def test_a_damaged_warmup_state_is_named_with_what_to_do(tmp_path, change):
    rd = RunDir(tmp_path)
    state = _stopped_warmup(rd)
    torch.save({**state, **change}, rd.warmup_checkpoint / "state.pt")
    with pytest.raises(RunDirError, match=r"state\.pt (is damaged|holds no valid random state).*restart the warm-up"):
        rd.read_warmup()


def test_states_are_saved_as_plain_data_and_other_objects_are_refused(tmp_path):
    rd = RunDir(tmp_path)
    with pytest.raises(TypeError, match=r"state\['bad'\] is a WritesAFile"):
        rd.save_checkpoint(lambda p: p.mkdir(parents=True), {"bad": WritesAFile(tmp_path / "x")}, step=1, run_id="r")
    assert not rd.checkpoint.exists()
    optimizer = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())
    state = {"step": 1, "optimizer": optimizer.state_dict()}
    rd.save_checkpoint(lambda p: p.mkdir(parents=True), state, step=1, run_id="r")
    assert torch.load(rd.state_file, weights_only=True)["step"] == 1


# ------------------------------------------------------------------------ evaluations keyed by settings
def test_a_resume_with_other_evaluation_settings_evaluates_again(trained, tmp_path, capsys, tiny):
    """Before issue 37 the resume reported the old evaluations under a header with the new settings."""
    out = _copy(trained, tmp_path)
    rd = RunDir(out)
    run(parse_overrides([*tiny, "steps=1", "eval_tasks=2", "eval_samples=3", f"out={out}"]))
    first = json.loads(rd.eval_file("init").read_text())
    assert first["settings"]["samples"] == 3
    assert first["settings"]["tasks"] == 2
    assert len(first["curve"]) == 3  # 3 candidates per task (one chain of m=3)
    capsys.readouterr()
    run(parse_overrides([*tiny, "steps=1", "eval_tasks=2", "eval_samples=3", f"out={out}"]))  # same: reused
    assert "evaluated the" not in capsys.readouterr().err
    report = run(parse_overrides([*tiny, "steps=1", "eval_tasks=3", "eval_samples=6", "eval_seeds=2", f"out={out}"]))
    err = capsys.readouterr().err
    assert "made with other settings" in err
    for which in ("init", "final"):
        saved = json.loads(rd.eval_file(which).read_text())
        assert (saved["settings"]["tasks"], saved["settings"]["samples"], saved["settings"]["seeds"]) == (3, 6, 2)
        assert len(saved["curve"]) == 12  # 6 candidates x 2 seeds
    assert "Evaluation on 3 test tasks, 6 candidates per task and seed, 2 seed(s)" in rd.report_md.read_text()
    assert (
        report["warm_started"]["mean_w_star"] == json.loads(rd.eval_file("init").read_text())["metrics"]["mean_w_star"]
    )


@pytest.mark.parametrize(
    "text",
    ["{not json", "[1, 2]", '{"metrics": {}}', "MODEL_OK_BAD_METRICS", "MODEL_OK_BAD_CURVE"],
)
def test_a_damaged_evaluation_file_is_named_with_what_to_do(tmp_path, text):
    rd = RunDir(tmp_path)
    settings = {"tasks": 2}
    good = {"metrics": {"mean_w_star": 0.5, "best@1": float("nan")}, "curve": [0.1, 0.2]}
    rd.write_eval("init", good, model="abc", settings=settings)
    assert rd.read_eval("init", model="abc", settings=settings)["metrics"]["mean_w_star"] == 0.5
    if text == "MODEL_OK_BAD_METRICS":
        text = json.dumps({**good, "metrics": {"mean_w_star": "high"}, "model": "abc", "settings": settings})
    elif text == "MODEL_OK_BAD_CURVE":
        text = json.dumps({**good, "curve": {"1": 0.2}, "model": "abc", "settings": settings})
    rd.eval_file("init").write_text(text)
    with pytest.raises(RunDirError, match=r"eval_init\.json .*delete .*eval_init\.json"):
        rd.read_eval("init", model="abc", settings=settings)


def test_a_damaged_evaluation_file_stops_a_resume_with_one_line(trained, tmp_path, capsys, tiny):
    out = _copy(trained, tmp_path)
    RunDir(out).eval_file("init").write_text('{"model": ')
    assert train_main([*tiny, "steps=1", "eval_tasks=1", "eval_samples=3", f"out={out}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "eval_init.json is not readable JSON" in err[-1]
    assert not any("Traceback" in line for line in err)


# ------------------------------------------------------------------------------ damaged model files
@pytest.mark.parametrize("keep", [0, 5, 100, -1])
def test_truncated_checkpoint_weights_are_one_line(trained, tmp_path, capsys, keep, tiny):
    from vpo_engines.runs import check_weights

    out = _copy(trained, tmp_path)
    weights = RunDir(out).checkpoint_model / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:keep] if keep >= 0 else data[: len(data) // 2])
    with pytest.raises(RunDirError, match=r"model\.safetensors is truncated or damaged"):
        check_weights(weights.parent)
    assert train_main([*tiny, "steps=2", f"out={out}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ")
    assert "truncated or damaged" in err[-1]
    assert "delete" in err[-1]
    assert not any("Traceback" in line for line in err)
    assert evaluate_main(["env=maze-v1", "env.test_size=1", f"checkpoints={out}", "progress=false", "device=cpu"]) == 2
    err = capsys.readouterr().err
    assert "truncated or damaged" in err.strip().splitlines()[-1]
    assert "Traceback" not in err


def test_a_complete_weights_file_passes_the_check(trained):
    from vpo_engines.runs import check_weights

    assert [p.name for p in check_weights(RunDir(trained).checkpoint_model)] == ["model.safetensors"]


def test_truncated_init_weights_are_one_line(trained, tmp_path, capsys, tiny):
    out = _copy(trained, tmp_path)
    weights = RunDir(out).init_model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])
    assert train_main([*tiny, "steps=2", f"out={out}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "init_model/model.safetensors is truncated or damaged" in err[-1]
    assert not any("Traceback" in line for line in err)


@pytest.mark.parametrize("folder", ["checkpoint", "init_model", "checkpoint/model"])
def test_a_file_where_a_folder_belongs_is_one_line(trained, tmp_path, capsys, folder, tiny):
    """Before issue 37 a file named ``checkpoint`` restarted RL from step 0 and dropped the logged history."""
    import shutil

    out = _copy(trained, tmp_path)
    shutil.rmtree(out / folder)
    (out / folder).write_text("not a folder")
    assert train_main([*tiny, "steps=2", f"out={out}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert f"{out / folder} is a file where the run's" in err[-1]
    assert not any("Traceback" in line for line in err)
    assert (out / folder).read_text() == "not a folder"  # nothing replaced it
    assert [r["step"] for r in RunDir(out).read_metrics()] == [0]  # the history is kept
    assert evaluate_main(["env=maze-v1", "env.test_size=1", f"checkpoints={out}", "progress=false", "device=cpu"]) == 2
    err = capsys.readouterr().err
    assert "is a file where the run's" in err.strip().splitlines()[-1]
    assert "Traceback" not in err


# ------------------------------------------------------------------------------- evaluate without data
def test_evaluate_on_lcb_without_data_says_how_to_get_it(tmp_path, trained, capsys):
    pytest.importorskip("env_lcb")
    assert (
        evaluate_main(
            [
                "env=lcb-v1",
                f"env.data_dir={tmp_path / 'no-data'}",
                f"checkpoints={RunDir(trained).checkpoint_model}",
                "method=grpo",
                "progress=false",
                "device=cpu",
                f"out={tmp_path / 'eval'}",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    message = err.splitlines()[-1]
    assert message.startswith("error: ")
    assert "DeepCoder-Preview-Dataset" in message
    assert "data_dir" in message


def test_env_tasks_turns_missing_data_into_the_user_error(tmp_path):
    pytest.importorskip("env_lcb")
    import vpo_core
    from vpo_core.registry import env_tasks

    with pytest.raises(MissingDataError, match="data_dir"):
        env_tasks(vpo_core.make("lcb-v1", data_dir=str(tmp_path)), "test")
