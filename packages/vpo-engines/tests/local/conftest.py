"""Option lists of the tiny local-engine runs the tests in this folder start (each test adds its steps and ``out=``).

`parse_overrides` takes the last value of a key given twice, so a test file that needs one setting changed
appends it (``[*micro_run, "warmup_steps=2"]``).
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_run() -> tuple[str, ...]:
    """A run of a few seconds: a 32-wide one-layer model, 2 warm-up steps of 4, 2 prompts x 2 rollouts per RL
    step, no evaluation, one thread, maze with 20 train and 4 test tasks."""
    return (
        "hidden_size=32",
        "layers=1",
        "heads=2",
        "vocab_size=400",
        "warmup_steps=2",
        "warmup_batch=4",
        "prompts_per_step=2",
        "group_size=2",
        "eval_tasks=0",
        "threads=1",
        "env.train_size=20",
        "env.test_size=4",
    )


@pytest.fixture(scope="session")
def micro_run() -> tuple[str, ...]:
    """A smaller run still: a 16-wide one-layer model, 1 warm-up step of 2, 1 prompt x 2 rollouts of at most 8
    tokens per RL step, no evaluation, one thread, maze with 8 train tasks and 1 test task."""
    return (
        "hidden_size=16",
        "layers=1",
        "heads=2",
        "vocab_size=300",
        "warmup_steps=1",
        "warmup_batch=2",
        "prompts_per_step=1",
        "group_size=2",
        "max_new_tokens=8",
        "eval_tasks=0",
        "threads=1",
        "env.train_size=8",
        "env.test_size=1",
    )
