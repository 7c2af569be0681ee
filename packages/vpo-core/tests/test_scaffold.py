"""The scaffold end to end: a generated env package passes ruff, its own tests and one local training step.

The package is generated into a temporary copy of the workspace root (the real ``pyproject.toml``, so
the real ruff and pytest settings apply). Installing it would change the shared environment, so the
tests put its ``src`` on ``PYTHONPATH`` next to a minimal ``.dist-info`` that declares its ``vpo.envs``
entry point: exactly what an editable install provides to `importlib.metadata`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vpo_core.scaffold import main, names_for, register_in_workspace, render, scaffold

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "packages").mkdir()
    package, changes = scaffold("word-count", root)
    assert len(changes) == 3
    site = root / "site" / "env_word_count-0.1.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: env-word-count\nVersion: 0.1.0\n")
    (site / "entry_points.txt").write_text("[vpo.envs]\nword-count-v1 = env_word_count:WordCountEnv\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package / "src"), str(site.parent)]))
    return root, package, env


def _run(args, cwd, env=None, timeout=300):
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def test_the_package_has_the_standard_shape(workspace):
    _, package, _ = workspace
    module = package / "src" / "env_word_count"
    for role in ("_env", "_data", "_prompts", "_parse", "_reward", "_profile", "cli", "__init__", "__main__"):
        assert (module / f"{role}.py").is_file(), role
    assert (module / "py.typed").is_file()
    assert (package / "tests" / "test_env.py").is_file()
    assert sorted(p.name for p in (package / "tests" / "data").iterdir()) == ["test.jsonl", "train.jsonl"]
    meta = tomllib.loads((package / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "env-word-count"
    assert meta["project"]["entry-points"]["vpo.envs"] == {"word-count-v1": "env_word_count:WordCountEnv"}
    assert meta["project"]["scripts"] == {"env-word-count": "env_word_count.cli:main"}
    assert "word-count-v1" in (package / "README.md").read_text()
    assert "## 0.1.0" in (package / "CHANGELOG.md").read_text()  # RELEASING.md: a section per released version


def test_the_workspace_root_installs_it(workspace):
    root, _, _ = workspace
    before = tomllib.loads((ROOT / "pyproject.toml").read_text())
    after = tomllib.loads((root / "pyproject.toml").read_text())
    assert after["project"]["dependencies"] == [*before["project"]["dependencies"], "env-word-count"]
    assert after["tool"]["uv"]["sources"]["env-word-count"] == {"workspace": True}
    first_party = after["tool"]["ruff"]["lint"]["isort"]["known-first-party"]
    assert first_party[-1] == "env_word_count"
    assert {k: v for k, v in after["tool"]["uv"]["sources"].items() if k != "env-word-count"} == before["tool"]["uv"][
        "sources"
    ]
    assert register_in_workspace(root / "pyproject.toml", names_for("word-count")) == []  # idempotent


@pytest.mark.slow
def test_generated_package_passes_ruff_as_generated(workspace):
    root, package, _ = workspace
    _run([str(BIN / "ruff"), "check", str(package)], cwd=root)
    _run([str(BIN / "ruff"), "format", "--check", str(package)], cwd=root)


@pytest.mark.slow
def test_generated_package_passes_its_tests_as_generated(workspace):
    root, package, env = workspace
    out = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(package)], cwd=root, env=env)
    assert " passed" in out
    assert "failed" not in out


@pytest.mark.slow
def test_generated_env_trains_one_step_on_the_local_engine(workspace, tmp_path):
    _, _, env = workspace
    run = tmp_path / "run"
    args = ["env=word-count-v1", "steps=1", f"out={run}", "warmup_steps=2", "eval_tasks=2", "eval_samples=2"]
    _run([sys.executable, str(ROOT / "apps" / "train.py"), *args], cwd=ROOT, env=env, timeout=600)
    assert any(run.iterdir())


@pytest.mark.slow
def test_generated_env_composes_on_the_verl_path(workspace, tmp_path):
    pytest.importorskip("verl")
    _, _, env = workspace
    args = ["engine=verl", "env=word-count-v1", "method=vpo", f"out={tmp_path}", "--dry-run"]
    out = _run([sys.executable, str(ROOT / "apps" / "train.py"), *args], cwd=ROOT, env=env)
    assert out.startswith("veRL run: word-count-v1 x vpo (n = 8), values from vpo-engines' generic defaults")
    assert (tmp_path / "verl_config.yaml").is_file()


@pytest.mark.parametrize(
    ("name", "package", "module", "env_id", "class_name"),
    [
        ("count", "env-count", "env_count", "count-v1", "CountEnv"),
        ("word-count", "env-word-count", "env_word_count", "word-count-v1", "WordCountEnv"),
        ("sql2", "env-sql2", "env_sql2", "sql2-v1", "Sql2Env"),
    ],
)
def test_names(name, package, module, env_id, class_name):
    names = names_for(name)
    assert (names.package, names.module, names.env_id, names.class_name) == (package, module, env_id, class_name)


@pytest.mark.parametrize(
    "bad", ["", "Count", "word_count", "2count", "count-", "a--b", "maze-v2", "my env", "count\n", "maze-v2\n"]
)
def test_bad_names_are_refused(bad):
    with pytest.raises(ValueError, match="env name"):
        names_for(bad)


def test_every_template_field_is_filled():
    for path, text in render(names_for("count")).items():
        assert "${" not in text, path
        assert "env_count" in str(path) or "module" not in path.parts


def test_the_command_refuses_to_overwrite_and_needs_a_root(tmp_path, capsys):
    (tmp_path / "packages" / "env-count").mkdir(parents=True)
    assert main(["name=count", f"root={tmp_path}"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["name=other", f"root={tmp_path}"]) == 2
    assert "pyproject.toml not found" in capsys.readouterr().err
    assert main(["name=other", f"root={tmp_path}", "register=false"]) == 0
    assert (tmp_path / "packages" / "env-other" / "src" / "env_other" / "_env.py").is_file()


def test_a_bug_in_the_command_is_a_traceback_not_a_one_line_message(tmp_path, monkeypatch):
    import vpo_core.scaffold as scaffold_module

    def broken(_names):
        raise ValueError("substring not found")

    monkeypatch.setattr(scaffold_module, "render", broken)
    with pytest.raises(ValueError, match="substring not found"):
        main(["name=other", f"root={tmp_path}", "register=false"])


def test_one_line_arrays_and_tables_without_first_party_lists(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "x"\ndependencies = ["vpo-core[a,b]", "env-maze"]  # comment ]\n\n'
        "[tool.uv.sources]\nvpo-core = { workspace = true }\n\n[tool.other]\nkey = 1\n"
    )
    changes = register_in_workspace(pyproject, names_for("count"))
    data = tomllib.loads(pyproject.read_text())
    assert data["project"]["dependencies"] == ["vpo-core[a,b]", "env-maze", "env-count"]
    assert data["tool"]["uv"]["sources"] == {"vpo-core": {"workspace": True}, "env-count": {"workspace": True}}
    assert data["tool"]["other"] == {"key": 1}
    assert len(changes) == 2


@pytest.mark.parametrize("name", ["count\n", "a" * 300, "word-" * 60 + "x", "count\r\n"])
def test_a_bad_name_leaves_the_workspace_as_it_was(tmp_path, capsys, name):
    # A trailing newline passed the `$` of the name pattern and broke the root pyproject.toml while the command
    # reported success; a 300-character name failed with a traceback (file name too long). Both are refused
    # in one line, before any file is written.
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "packages").mkdir()
    before = (tmp_path / "pyproject.toml").read_bytes()
    assert main([f"name={name}", f"root={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: env name")
    assert err.count("\n") == 1
    assert (tmp_path / "pyproject.toml").read_bytes() == before
    assert list((tmp_path / "packages").iterdir()) == []


def test_the_longest_name_is_accepted_and_the_next_refused():
    from vpo_core.errors import ConfigError
    from vpo_core.scaffold import MAX_NAME_LENGTH

    assert names_for("a" * MAX_NAME_LENGTH).package == "env-" + "a" * MAX_NAME_LENGTH
    with pytest.raises(ConfigError, match=f"over the limit of {MAX_NAME_LENGTH}"):
        names_for("a" * (MAX_NAME_LENGTH + 1))


def test_an_edit_that_would_not_register_the_package_is_refused_and_nothing_is_written(tmp_path, capsys):
    # The root already maps env-count to something else: the edit would add the dependency without its
    # workspace source, and `uv run` would then look for env-count on the package index. Refused, unchanged.
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "x"\ndependencies = ["vpo-core"]\n\n'
        '[tool.uv.sources]\nvpo-core = { workspace = true }\nenv-count = { path = "elsewhere" }\n'
    )
    before = pyproject.read_bytes()
    (tmp_path / "packages").mkdir()
    assert main(["name=count", f"root={tmp_path}"]) == 2
    assert "did not register it" in capsys.readouterr().err
    assert pyproject.read_bytes() == before
    assert not (tmp_path / "packages" / "env-count").exists()
