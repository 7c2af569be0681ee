"""A run never loses or mixes data (issue 15): non-finite losses, killed checkpoint swaps, stale
evaluations, truncated metrics, corrupt optimizer state."""

from __future__ import annotations

import json
import os

import pytest
import torch

from vpo_engines import runs as runs_module
from vpo_engines.local import rl as rl_module
from vpo_engines.local.config import parse_overrides
from vpo_engines.local.rl import NonFiniteLossError
from vpo_engines.local.train import main as train_main
from vpo_engines.local.train import run
from vpo_engines.runs import RunDir, RunDirError


def _weights(path):
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def test_non_finite_loss_stops_without_touching_the_checkpoint(tmp_path, monkeypatch, tiny_run):
    out = tmp_path / "run"
    run(parse_overrides([*tiny_run, "steps=1", "save_every=1", f"out={out}"]))
    before = _weights(out / "checkpoint" / "model")
    real = rl_module.actor_loss

    def nan_loss(*args, **kwargs):
        loss, stats = real(*args, **kwargs)
        return loss * float("nan"), stats

    monkeypatch.setattr(rl_module, "actor_loss", nan_loss)
    with pytest.raises(NonFiniteLossError, match="last good checkpoint is kept"):
        run(parse_overrides([*tiny_run, "steps=3", "save_every=1", f"out={out}"]))
    assert RunDir(out).read_manifest()["step"] == 1
    after = _weights(out / "checkpoint" / "model")
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(torch.isfinite(v).all() for v in after.values())
    assert [r["step"] for r in RunDir(out).read_metrics()] == [0]


def test_non_finite_loss_is_a_one_line_error(tmp_path, monkeypatch, capsys, tiny_run):
    monkeypatch.setattr(rl_module, "actor_loss", lambda *a, **k: (torch.tensor(float("inf"), requires_grad=True), {}))
    assert train_main([*tiny_run, "steps=1", f"out={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert "error: RL step 0: the loss is inf" in err
    assert not (tmp_path / "run" / "checkpoint").exists()


@pytest.mark.parametrize("failing_call", [1, 2])
def test_a_kill_during_the_checkpoint_swap_keeps_a_complete_copy(tmp_path, monkeypatch, failing_call, tiny_run):
    out = tmp_path / "run"
    run(parse_overrides([*tiny_run, "steps=1", "save_every=1", f"out={out}"]))
    rd = RunDir(out)
    calls = {"n": 0}
    real_replace = os.replace

    def flaky_replace(src, dst):
        if "checkpoint" in str(src):
            calls["n"] += 1
            if calls["n"] == failing_call:
                raise OSError("killed")
        return real_replace(src, dst)

    monkeypatch.setattr(runs_module.os, "replace", flaky_replace)
    with pytest.raises(OSError, match="killed"):
        run(parse_overrides([*tiny_run, "steps=2", "save_every=1", f"out={out}"]))
    monkeypatch.setattr(runs_module.os, "replace", real_replace)
    # killed after checkpoint -> checkpoint.old (call 2): no checkpoint/ at all on disk
    assert rd.checkpoint.exists() == (failing_call == 1)
    rd.recover()
    assert rd.has_checkpoint()
    # either copy is fine (the new one when complete); it is never the warm-started model again
    assert rd.read_manifest()["step"] == (2 if failing_call == 2 else 1)
    report = run(parse_overrides([*tiny_run, "steps=3", "save_every=1", f"out={out}"]))
    steps = [r["step"] for r in rd.read_metrics()]
    assert steps == [0, 1, 2]
    assert report["run_id"] == rd.run_id()
    assert not (out / "checkpoint.tmp").exists()
    assert not (out / "checkpoint.old").exists()


def test_a_stale_init_evaluation_is_recomputed(tmp_path, tiny_run):
    out = tmp_path / "run"
    args = [*tiny_run, "steps=1", "eval_tasks=2", "eval_samples=3", f"out={out}"]
    run(parse_overrides(args))
    rd = RunDir(out)
    saved = json.loads(rd.eval_file("init").read_text())
    assert saved["model"] == rd.run_id()
    # an eval_init.json left by another model (e.g. a run that was warmed up again)
    saved["model"] = "0" * 16
    saved["metrics"]["mean_w_star"] = 123.0
    rd.eval_file("init").write_text(json.dumps(saved))
    report = run(parse_overrides(args))
    assert report["warm_started"]["mean_w_star"] != 123.0
    assert json.loads(rd.eval_file("init").read_text())["model"] == rd.run_id()


def test_a_checkpoint_of_another_init_model_is_refused(tmp_path, tiny_run):
    out = tmp_path / "run"
    run(parse_overrides([*tiny_run, "steps=1", "save_every=1", f"out={out}"]))
    manifest = RunDir(out).manifest_file
    manifest.write_text(json.dumps({"step": 1, "run_id": "f" * 16}))
    with pytest.raises(RunDirError, match="another init model"):
        run(parse_overrides([*tiny_run, "steps=2", f"out={out}"]))


def test_a_truncated_metrics_line_is_dropped_and_the_run_resumes(tmp_path, capsys, tiny_run):
    out = tmp_path / "run"
    run(parse_overrides([*tiny_run, "steps=2", "save_every=2", f"out={out}"]))
    rd = RunDir(out)
    text = rd.metrics_file.read_text()
    rd.metrics_file.write_text(text + text.splitlines()[0][:25])  # a kill mid-write
    run(parse_overrides([*tiny_run, "steps=3", "save_every=1", f"out={out}"]))
    assert "dropped a truncated last line" in capsys.readouterr().err
    assert [r["step"] for r in rd.read_metrics()] == [0, 1, 2]


def test_read_metrics_recovers_and_names_a_bad_middle_line(tmp_path):
    rd = RunDir(tmp_path)
    rd.metrics_file.write_text('{"step": 0}\n{"step": 1}\n{"st')
    messages = []
    assert [r["step"] for r in rd.read_metrics(messages.append)] == [0, 1]
    assert messages
    assert rd.metrics_file.read_text() == '{"step": 0}\n{"step": 1}\n'
    rd.metrics_file.write_text('{"step": 0}\n{"st\n{"step": 2}\n')
    with pytest.raises(RunDirError, match=r"metrics\.jsonl line 2"):
        rd.read_metrics()


def test_a_corrupt_state_file_is_named_with_what_to_do(tmp_path, capsys, tiny_run):
    out = tmp_path / "run"
    run(parse_overrides([*tiny_run, "steps=1", "save_every=1", f"out={out}"]))
    (out / "checkpoint" / "state.pt").write_bytes(b"not a torch file")
    assert train_main([*tiny_run, "steps=2", f"out={out}"]) == 2
    err = capsys.readouterr().err
    assert "state.pt is corrupt or unreadable" in err
    assert "delete" in err
    assert "Traceback" not in err


# ------------------------------------------------------------------ issue 22: damaged run-directory files
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "is damaged"),
        ('{"step": "x", "run_id": "r"}', "is damaged"),
        ('{"step": -3, "run_id": "r"}', "is damaged"),
        ('{"run_id": "r"}', "is damaged"),
        ('{"step": 2, "run_id": 7}', "is damaged"),
        ("{", "is unreadable"),
    ],
)
def test_a_damaged_manifest_is_named_with_what_to_do(tmp_path, text, message):
    run_dir = RunDir(tmp_path)
    run_dir.checkpoint.mkdir(parents=True)
    run_dir.manifest_file.write_text(text)
    with pytest.raises(RunDirError, match=message) as caught:
        run_dir.read_manifest()
    assert str(run_dir.manifest_file) in str(caught.value)
    assert "out=<new dir>" in str(caught.value)


def test_a_manifest_claiming_steps_that_never_ran_is_refused(tmp_path):
    run_dir = RunDir(tmp_path)
    run_dir.checkpoint.mkdir(parents=True)
    torch.save({"step": 2, "optimizer": {"state": {}, "param_groups": []}}, run_dir.state_file)
    assert run_dir.load_state(step=2)["step"] == 2
    with pytest.raises(RunDirError, match=r"claims 40 steps but .* was saved after 2"):
        run_dir.load_state(step=40)
    torch.save([1, 2], run_dir.state_file)
    with pytest.raises(RunDirError, match="holds no optimizer state"):
        run_dir.load_state(step=2)


@pytest.mark.parametrize("line", ["5", "[1]", '{"loss": 1}', '{"step": "3"}'])
def test_a_metrics_line_that_is_json_but_not_a_step_record_is_named(tmp_path, line):
    run_dir = RunDir(tmp_path)
    run_dir.metrics_file.write_text('{"step": 0}\n' + line + '\n{"step": 1}\n')
    with pytest.raises(RunDirError, match="line 2 is not a step record"):
        run_dir.read_metrics()


def test_a_config_that_is_json_but_not_an_object_is_named(tmp_path):
    run_dir = RunDir(tmp_path)
    run_dir.config_file.write_text("[1, 2]")
    with pytest.raises(RunDirError, match="holds a JSON list"):
        run_dir.read_config()
