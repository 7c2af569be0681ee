"""Internal errors keep their traceback (issue 36): the local engine's ``main`` turns only the project's
user-error types (`vpo_core.errors`: a bad option, an unusable file or run directory, missing data) into
one line and exit code 2; any other exception, a ``ValueError`` raised deep inside a run included,
propagates with its stack."""

from __future__ import annotations

import pytest

from vpo_core import errors
from vpo_engines.local.train import main as train_main
from vpo_engines.models.policy import Policy


@pytest.fixture
def tiny(micro_run):
    """One RL step of the micro run."""
    return [*micro_run, "steps=1"]


def test_the_user_error_types_are_the_builtin_types_callers_caught():
    assert issubclass(errors.ConfigError, ValueError)
    assert issubclass(errors.DataFileError, ValueError)
    assert issubclass(errors.RunDirError, errors.DataFileError)
    assert issubclass(errors.MissingDataError, FileNotFoundError)
    for kind in (errors.ConfigError, errors.DataFileError, errors.RunDirError, errors.MissingDataError):
        assert issubclass(kind, errors.UserError)
        assert str(kind("the message")) == "the message"  # one line as written, never quoted like a KeyError
    from vpo_core.cli_config import ConfigError
    from vpo_engines.runs import RunDirError

    assert RunDirError is errors.RunDirError
    assert ConfigError is errors.ConfigError


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["env=nope-v9"], "nope-v9"),  # an unknown env id (the registry's KeyError)
        (["env.train_size=0"], "train_size"),  # an env option its constructor refuses
        (["model=/nonexistent/model"], "/nonexistent/model is not a directory"),
        (["lr=-1"], "lr must be"),  # a bad option value
    ],
)
def test_a_user_error_is_one_line_and_exit_code_2(tmp_path, capsys, args, message, tiny):
    assert train_main([*tiny, *args, f"out={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ")
    assert message in err[-1]
    assert not any("Traceback" in line for line in err)
    assert not (tmp_path / "run").exists()


def test_a_run_directory_of_other_settings_is_a_user_error(tmp_path, capsys, tiny):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text('{"method": "grpo"}')
    assert train_main([*tiny, f"out={tmp_path / 'run'}"]) == 2
    assert "holds a run with different settings" in capsys.readouterr().err


def test_a_value_error_deep_inside_a_run_keeps_its_traceback(tmp_path, monkeypatch, tiny):
    """What transformers' stop-string criterion raised for one tokenizer used to end as 'error: substring not found'."""

    def broken(self, prompts, **kwargs):
        raise ValueError("substring not found")

    monkeypatch.setattr(Policy, "generate_with_log_probs", broken)  # the first RL step's sampling
    with pytest.raises(ValueError, match="substring not found") as raised:
        train_main([*tiny, f"out={tmp_path / 'run'}"])
    assert not isinstance(raised.value, errors.UserError)
    assert raised.traceback[-1].name == "broken"  # the stack reaches where it was raised
