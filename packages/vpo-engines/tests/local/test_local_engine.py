"""The local engine on CPU with a tiny model: loss, one RL step, resume, bad input, evaluate.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import vpo_core
from vpo_engines.cli import main as vpo
from vpo_engines.local.config import parse_overrides
from vpo_engines.local.loss import actor_loss
from vpo_engines.local.train import main as train_main
from vpo_engines.local.train import run
from vpo_engines.models.policy import build_tokenizer, load_policy

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def tiny(tiny_run):
    """The folder's `tiny_run` (conftest.py) with 3 warm-up steps."""
    return [*tiny_run, "warmup_steps=3"]


# ----------------------------------------------------------------------------------- config
def test_config_defaults_and_validation():
    config = parse_overrides([])
    assert (config.env, config.method, config.m, config.mode, config.group_size) == ("maze-v1", "vpo", 3, "multi", 8)
    # the default run's recipe (issue 40: about two minutes on 2 cores; docs/engines/local.md, BENCHMARKS.md)
    assert (config.hidden_size, config.layers, config.warmup_steps, config.warmup_batch) == (128, 2, 300, 16)
    assert (config.steps, config.prompts_per_step, config.lr) == (20, 12, 2e-4)
    assert parse_overrides(["method=grpo"]).m == 1
    with pytest.raises(ValueError, match="unknown method 'ppo'"):
        parse_overrides(["method=ppo"])
    with pytest.raises(ValueError, match="single-answer, so m must be 1"):
        parse_overrides(["method=grpo", "m=3"])
    with pytest.raises(ValueError, match="unknown option 'stepz'; did you mean steps"):
        parse_overrides(["stepz=3"])
    with pytest.raises(ValueError, match="steps expects an integer"):
        parse_overrides(["steps=many"])
    with pytest.raises(ValueError, match="key=value"):
        parse_overrides(["--dry-run"])


# -------------------------------------------------------------------------------- tokenizer
def test_tokenizer_round_trips_and_keeps_cells_and_moves_atomic():
    env = vpo_core.make("maze-v1", train_size=20, test_size=2)
    task = env.tasks("train")[0]
    texts = [
        env.render_prompt(task, mode="multi", m=3)[0]["content"],
        env.reference_completion(task, mode="multi", m=3),
    ]
    tok = build_tokenizer(texts * 20, 500)
    for text in texts:
        assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    pieces = [tok.decode([i]) for i in tok(texts[1], add_special_tokens=False)["input_ids"]]
    assert {"RIGHT ", "DOWN "} & set(pieces)
    grid_pieces = [tok.decode([i]) for i in tok(task.payload.text, add_special_tokens=False)["input_ids"]]
    assert len(grid_pieces) == 81  # one token per cell (with its separator)


# ------------------------------------------------------------------------------------- loss
def test_actor_loss_matches_hand_computation():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    logp = torch.log(torch.tensor([[0.5, 0.5, 0.5], [0.2, 0.4, 0.5]]))
    adv = torch.tensor([1.0, -2.0])
    loss, stats = actor_loss(logp, logp.clone(), logp.clone(), adv, mask, kl_coef=0.5)
    # ratio 1, KL 0: token-mean of -A over the 5 valid tokens
    assert float(loss) == pytest.approx(-(1 + 1 - 2 - 2 - 2) / 5)
    assert stats["kl"] == pytest.approx(0.0)
    # a ratio above 1 + eps with A > 0 is clipped: no gradient
    new = logp.clone().requires_grad_(True)
    shifted = new + torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.0, 0.0]])
    loss, _ = actor_loss(shifted, logp, logp, adv, mask, kl_coef=0.0)
    loss.backward()
    assert new.grad[0, 0] == 0.0
    assert new.grad[0, 1] != 0.0
    # dual clip: with A < 0 the loss per token is capped at -A * c
    big = logp + torch.tensor([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    loss, _ = actor_loss(big, logp, logp, adv, mask, kl_coef=0.0, clip_ratio_c=3.0)
    expected = (-1 * 1 - 1 * 1 + 2 * 3.0 + 2 * 1 + 2 * 1) / 5
    assert float(loss) == pytest.approx(expected, rel=1e-6)


# ---------------------------------------------------------------------- training and resume
def _params(path: Path) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in load_policy(path).model.state_dict().items()}


def test_rl_steps_change_the_model_and_resume_is_exact(tmp_path, tiny):
    one_go = tmp_path / "one_go"
    run(parse_overrides([*tiny, "steps=2", "save_every=1", f"out={one_go}"]))
    init, final = _params(one_go / "init_model"), _params(one_go / "checkpoint" / "model")
    assert any(not torch.equal(init[k], final[k]) for k in init)
    history = [json.loads(line) for line in (one_go / "metrics.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history] == [0, 1]
    assert {
        "reward/gold",
        "set_reward",
        "best_of_m",
        "diversity",
        "actor/kl_loss",
        "actor/entropy",
        "critic/score/mean",
    } <= set(history[0])
    assert (one_go / "training.png").stat().st_size > 0

    resumed = tmp_path / "resumed"
    run(parse_overrides([*tiny, "steps=1", "save_every=1", f"out={resumed}"]))
    run(parse_overrides([*tiny, "steps=2", "save_every=1", f"out={resumed}"]))  # the same command, more steps
    again = _params(resumed / "checkpoint" / "model")
    for key in final:
        torch.testing.assert_close(again[key], final[key], rtol=0, atol=0)
    with pytest.raises(ValueError, match="holds a run with different settings"):
        run(parse_overrides([*tiny, "steps=2", "lr=0.1", f"out={resumed}"]))


def test_a_stopped_warm_up_goes_on_from_its_last_save_and_ends_with_the_same_weights(
    tmp_path, tiny, monkeypatch, capsys
):
    import vpo_engines.local.train as train_module
    from vpo_engines.local import warmup

    warm = [*tiny, "warmup_steps=5", "warmup_save_every=2", "steps=0"]
    one_go = tmp_path / "one_go"
    run(parse_overrides([*warm, f"out={one_go}"]))
    assert not (one_go / "warmup").exists()  # dropped once init_model is saved
    expected = _params(one_go / "init_model")

    stopped = tmp_path / "stopped"
    real_warm_up = warmup.warm_up

    def stop_after_step_3(*args, **kwargs):
        def log(step, loss):
            if step == 3:
                raise KeyboardInterrupt

        return real_warm_up(*args, **{**kwargs, "log": log})

    monkeypatch.setattr(warmup, "warm_up", stop_after_step_3)
    with pytest.raises(KeyboardInterrupt):
        run(parse_overrides([*warm, f"out={stopped}"]))
    monkeypatch.setattr(warmup, "warm_up", real_warm_up)
    assert json.loads((stopped / "warmup" / "manifest.json").read_text()) == {"step": 2}
    assert not (stopped / "init_model").exists()
    capsys.readouterr()

    run(parse_overrides([*warm, f"out={stopped}"]))  # the same command again
    assert "resuming the warm-up" in capsys.readouterr().err
    assert not (stopped / "warmup").exists()
    resumed = _params(stopped / "init_model")
    for key in expected:
        torch.testing.assert_close(resumed[key], expected[key], rtol=0, atol=0)
    losses = json.loads((stopped / "warmup_loss.json").read_text())
    assert losses == json.loads((one_go / "warmup_loss.json").read_text())
    assert train_module.RunDir(stopped).read_warmup() is None


def test_a_damaged_warm_up_save_names_the_folder_to_delete(tmp_path, tiny):
    from vpo_engines.runs import RunDirError

    out = tmp_path / "run"
    (out / "warmup").mkdir(parents=True)
    (out / "warmup" / "manifest.json").write_text('{"step": 2}')
    (out / "warmup" / "state.pt").write_bytes(b"not a torch file")
    with pytest.raises(
        RunDirError, match=r"warmup/state\.pt is corrupt or unreadable.*delete .*warmup to restart the warm-up"
    ):
        run(parse_overrides([*tiny, "warmup_steps=5", "steps=0", f"out={out}"]))


def test_identical_rewards_give_zero_advantage_and_no_policy_gradient():
    from vpo_core import AdvantageConfig, RolloutBatch, compute_advantages

    rewards = np.zeros((2, 4, 3, 4))
    adv = torch.as_tensor(
        compute_advantages(RolloutBatch.of(rewards, w_star=np.full(4, 0.25)), AdvantageConfig.parse("vpo")),
        dtype=torch.float32,
    )
    logp = torch.zeros(8, 5, requires_grad=True)
    loss, _ = actor_loss(logp, logp.detach(), logp.detach(), adv.reshape(-1), torch.ones(8, 5), kl_coef=0.0)
    loss.backward()
    assert torch.count_nonzero(logp.grad) == 0


# -------------------------------------------------------------------------------- bad input
def test_bad_input_messages(tmp_path, capsys):
    out = f"out={tmp_path / 'run'}"
    assert train_main(["env=maze-v9", out]) == 2
    assert "unknown env id 'maze-v9'" in capsys.readouterr().err
    assert train_main(["model=/nonexistent/model", out]) == 2
    assert "model=/nonexistent/model is not a directory" in capsys.readouterr().err
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "config.json").write_text("{}")
    assert train_main([f"model={tmp_path / 'bare'}", out]) == 2
    assert "has no tokenizer files" in capsys.readouterr().err
    assert train_main(["method=vpo", "m=1", out]) == 2
    assert "m must be >= 2" in capsys.readouterr().err


def _vpo_eval(argv: list[str]) -> int:
    """``vpo eval`` (apps/evaluate.py is its alias) with `argv`."""
    return vpo(["eval", *argv])


# ------------------------------------------------------------------------------ evaluate.py
def test_evaluate_app_writes_table_and_plot(tmp_path, tiny):
    run_dir = tmp_path / "run"
    run(parse_overrides([*tiny, "steps=1", f"out={run_dir}"]))
    evaluate = _vpo_eval
    out = tmp_path / "eval"
    code = evaluate([f"checkpoints={run_dir},{run_dir}@init", "tasks=3", "samples=6", f"out={out}"])
    assert code == 0
    table = (out / "table.md").read_text()
    assert "| run | multi, 3 |" in table
    assert "| run@init | multi, 3 |" in table
    results = json.loads((out / "results.json").read_text())
    assert len(results["rows"]["run"]["curve"]) == 6
    assert (out / "best_at_k.png").read_bytes()[:4] == b"\x89PNG"


def test_kept_steps_are_snapshots_that_evaluate_reads(tmp_path, tiny, capsys):
    run_dir = tmp_path / "run"
    run(parse_overrides([*tiny, "steps=3", "save_every=10", "keep_steps=1,2", f"out={run_dir}"]))
    step1, step2 = _params(run_dir / "snapshots" / "step1"), _params(run_dir / "snapshots" / "step2")
    init, final = _params(run_dir / "init_model"), _params(run_dir / "checkpoint" / "model")
    for a, b in ((init, step1), (step1, step2), (step2, final)):  # each snapshot is its own step's model
        assert any(not torch.equal(a[k], b[k]) for k in a)
    # the same run without snapshots reaches the same final model: keeping them changes nothing
    plain = tmp_path / "plain"
    run(parse_overrides([*tiny, "steps=3", "save_every=10", f"out={plain}"]))
    for key, value in _params(plain / "checkpoint" / "model").items():
        torch.testing.assert_close(value, final[key], rtol=0, atol=0)
    evaluate = _vpo_eval
    out = tmp_path / "eval"
    assert evaluate([f"checkpoints={run_dir}@step1", "tasks=2", "samples=3", f"out={out}", "progress=false"]) == 0
    assert "| run@step1 | multi, 3 |" in (out / "table.md").read_text()
    assert evaluate([f"checkpoints={run_dir}@step7", "tasks=1"]) == 2  # one line: the snapshot is not there
    assert "snapshots/step7" in capsys.readouterr().err
    with pytest.raises(ValueError, match="keep_steps must be comma-separated step numbers"):
        parse_overrides(["keep_steps=0"])


# ----------------------------------------------------------------------------------- warm-up
def test_supervised_warm_up_reduces_loss():
    from vpo_engines.local.warmup import warm_up
    from vpo_engines.models.policy import ModelSpec, new_policy

    env = vpo_core.make("maze-v1", train_size=8, test_size=2)
    tasks = env.tasks("train")
    rng = np.random.default_rng(0)
    texts = [env.render_prompt(t, mode="single", m=1)[0]["content"] for t in tasks]
    texts += [env.demonstration(t, mode="single", m=1, rng=rng) for t in tasks]
    policy = new_policy(
        texts * 5, ModelSpec(vocab_size=400, hidden_size=32, layers=1, heads=2, max_positions=1024), seed=0
    )
    losses = warm_up(policy, env, tasks, mode="single", m=1, steps=40, batch_size=4, lr=3e-3, seed=0)
    assert len(losses) == 40
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])
