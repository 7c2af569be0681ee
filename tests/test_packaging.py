"""Release hygiene of every workspace package, and the standalone install a new user does.

Fast checks: versions are single-sourced (pyproject only), every package's range on vpo-core admits
the core's version, every package has a CHANGELOG entry for its version, and each module's third-party
imports are declared by the extra that module belongs to. Slow check: wheels and sdists build, and
env-maze / env-musique install with plain ``pip --no-index --find-links dist`` into a fresh venv (no
path to vpo-core given), after which their CLI and Python API work. Nothing reaches the network:
builds and third-party wheels come from uv's cache (``--offline``), pip gets ``--no-index``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml with the stdlib tomllib (Python 3.11+)")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))
CORE = "vpo-core"
ENGINES = "vpo-engines"


def _project(package_dir: Path) -> dict:
    return tomllib.loads((package_dir / "pyproject.toml").read_text())["project"]


def _module_name(dist: str) -> str:
    return dist.replace("-", "_")


PROJECTS = {_project(d)["name"]: d for d in PACKAGE_DIRS}
CORE_VERSION = Version(_project(PROJECTS[CORE])["version"])


def test_workspace_has_the_expected_packages():
    assert {CORE, "env-maze", "env-musique", "env-eureqa", "env-toolrl", "env-lcb"} <= set(PROJECTS)


# ------------------------------------------------------------------------------ versions
@pytest.mark.parametrize("dist", sorted(PROJECTS))
def test_version_is_single_sourced(dist):
    package_dir = PROJECTS[dist]
    declared = _project(package_dir)["version"]
    assert importlib.metadata.version(dist) == declared, f"re-sync the venv: `uv sync --inexact` ({dist})"
    assert importlib.import_module(_module_name(dist)).__version__ == declared
    literal = re.compile(r"""^__version__\s*=\s*["']""", re.MULTILINE)
    for path in (package_dir / "src").rglob("*.py"):
        assert not literal.search(path.read_text()), f"{path}: write the version in pyproject.toml only"


@pytest.mark.parametrize("dist", sorted(set(PROJECTS) - {CORE}))
def test_range_on_vpo_core_admits_the_core_version(dist):
    requirements = [Requirement(r) for r in _project(PROJECTS[dist])["dependencies"]]
    on_core = [r for r in requirements if r.name == CORE]
    assert len(on_core) == 1, f"{dist} must depend on {CORE} exactly once"
    specifier = on_core[0].specifier
    assert str(specifier), f"{dist}: give {CORE} a range (e.g. '>=0.1,<0.2'), so a breaking core release cannot slip in"
    assert specifier.contains(CORE_VERSION, prereleases=True), (
        f"{dist} declares {CORE}{specifier}, which excludes {CORE} {CORE_VERSION}: widen the range and release "
        f"{dist} (RELEASING.md)."
    )


@pytest.mark.parametrize("dist", sorted(PROJECTS))
def test_changelog_has_an_entry_for_the_current_version(dist):
    changelog = PROJECTS[dist] / "CHANGELOG.md"
    assert changelog.is_file(), f"{dist} needs a CHANGELOG.md (RELEASING.md)"
    version = _project(PROJECTS[dist])["version"]
    headings = re.findall(r"^## \[?([^\]\s]+)\]?", changelog.read_text(), flags=re.MULTILINE)
    assert version in headings, f"{changelog}: add a '## {version}' section"


# ------------------------------------------------------------------------------- license
def test_root_license_is_the_apache_2_text():
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text


@pytest.mark.parametrize("dist", sorted(PROJECTS))
def test_every_package_ships_the_license(dist):
    project = _project(PROJECTS[dist])
    assert project["license"] == "Apache-2.0"
    assert project.get("license-files") == ["LICENSE"], f'{dist}: add license-files = ["LICENSE"] to [project]'
    copy = PROJECTS[dist] / "LICENSE"
    assert copy.is_file(), f"{dist}: copy the root LICENSE into {PROJECTS[dist]} (a wheel holds only its own dir)"
    assert copy.read_bytes() == (ROOT / "LICENSE").read_bytes(), f"{copy} differs from the root LICENSE"


@pytest.mark.parametrize("dist", sorted(PROJECTS))
def test_releasing_names_every_package(dist):
    intro = (ROOT / "RELEASING.md").read_text().split("## ", 1)[0]
    assert f"`{dist}`" in intro, f"RELEASING.md: list {dist} among the released packages"


def _paper() -> tuple[str, list[str]]:
    """The paper's title and authors' family names, from CITATION.cff's preferred-citation."""
    text = (ROOT / "CITATION.cff").read_text()
    cited = text.split("preferred-citation:", 1)[1]
    title = re.search(r'^  title: "([^"]+)"', cited, flags=re.MULTILINE)
    assert title, "CITATION.cff: preferred-citation needs a title"
    return title.group(1), re.findall(r"family-names: (\S+)", cited)


def test_citation_names_the_paper():
    title, families = _paper()
    assert title == "Vector Policy Optimization: Training for Diversity Improves Test-Time Search"
    assert families[0] == "Bahlous-Boldi"
    assert len(families) == 9


@pytest.mark.parametrize("dist", sorted(PROJECTS))
def test_every_readme_names_the_paper_and_its_authors(dist):
    readme = " ".join((PROJECTS[dist] / "README.md").read_text().split())
    title, families = _paper()
    assert title in readme, f"{dist}/README.md: name the paper ({title})"
    missing = [f for f in families if f not in readme]
    assert not missing, f"{dist}/README.md: the paper's authors {missing} are missing"


def _assert_artefacts_carry_the_license(wheel: Path, sdist: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), f"{wheel.name} has no LICENSE"
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        assert "License-File: LICENSE" in archive.read(metadata).decode()
    with tarfile.open(sdist) as archive:
        assert any(n.count("/") == 1 and n.endswith("/LICENSE") for n in archive.getnames()), (
            f"{sdist.name}: no LICENSE"
        )


# ------------------------------------------------------------------- extras cover imports
# Which optional-dependency extras the modules under a path rely on (beyond the base dependencies).
# Other modules: module-level imports need a base dependency; lazy ones (in a function, or in a
# ``try`` that catches ImportError) need a base dependency or some extra of the package.
EXTRA_SCOPES: dict[str, dict[str, tuple[str, ...]]] = {
    CORE: {"vpo_core/gym.py": ("gym",)},
    ENGINES: {
        "vpo_engines/local/trackers.py": ("local", "tracking"),
        "vpo_engines/local/": ("local",),
        "vpo_engines/models/": ("local",),
        "vpo_engines/verl/": ("verl",),
        "vpo_engines/trl/": ("trl",),
    },
}
# Imports provided by an opt-in dependency group, not an extra (imported lazily, with an install hint).
GROUP_ONLY = {"vllm": "the `vllm` group (CUDA machines)"}
# Import names that differ from their distribution's name, for modules not installed here (opt-in groups).
DISTRIBUTION_OF = {"hydra": "hydra-core", "yaml": "pyyaml"}


def _catches_import_error(node: ast.Try) -> bool:
    names = (
        {n.id for h in node.handlers for n in ast.walk(h.type) if isinstance(n, ast.Name)} if node.handlers else set()
    )
    return bool(names & {"ImportError", "ModuleNotFoundError"})


def _third_party_imports(path: Path) -> dict[str, bool]:
    """Top-level names of the third-party modules a file imports → whether every import of it is lazy.

    Lazy: inside a function, or inside a ``try`` that catches ImportError (an optional feature).
    """
    imports: dict[str, bool] = {}

    def visit(node: ast.AST, lazy: bool) -> None:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module.split(".")[0]]
        for name in names:
            imports[name] = imports.get(name, True) and lazy
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        inner = inner or (isinstance(node, ast.Try) and _catches_import_error(node))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text()), lazy=False)
    first_party = {_module_name(d) for d in PROJECTS}
    return {
        name: lazy
        for name, lazy in imports.items()
        if name not in sys.stdlib_module_names and name not in first_party and name != "__future__"
    }


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.mark.parametrize("dist", sorted(PROJECTS))
def test_every_third_party_import_is_declared(dist):
    project = _project(PROJECTS[dist])
    base = {_canonical(Requirement(r).name) for r in project.get("dependencies", [])}
    extras = {
        extra: {_canonical(Requirement(r).name) for r in reqs}
        for extra, reqs in project.get("optional-dependencies", {}).items()
    }
    providers = importlib.metadata.packages_distributions()
    src = PROJECTS[dist] / "src"
    problems = []
    for path in sorted(src.rglob("*.py")):
        relative = path.relative_to(src).as_posix()
        scope = next((s for prefix, s in EXTRA_SCOPES.get(dist, {}).items() if relative.startswith(prefix)), None)
        for module, lazy in sorted(_third_party_imports(path).items()):
            if module in GROUP_ONLY:
                continue
            if scope is not None:  # a module of an extra: its imports come with that extra
                allowed, where = base.union(*(extras[e] for e in scope)), f"extra(s) {', '.join(scope)}"
            elif lazy:  # an optional feature of a base module: some extra must install it
                allowed, where = base.union(*extras.values()), "dependencies or extras"
            else:  # imported when the package is imported: a base dependency
                allowed, where = base, "base dependencies"
            dists = {_canonical(d) for d in providers.get(module, [])}
            dists = dists or {_canonical(DISTRIBUTION_OF.get(module, module))}  # not installed: by its name
            if not dists & allowed:
                problems.append(f"{relative}: imports {module!r} ({'/'.join(sorted(dists))}), not in {dist}'s {where}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- standalone wheel install
def _uv() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        pytest.skip("needs the uv binary (pip install uv)")
    return uv


def _run(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _make_venv(venv: Path) -> list[str | Path]:
    """A stdlib venv at `venv`; returns the pip command that installs into it.

    Its own pip (ensurepip, offline) where the base Python has ensurepip; else (Debian's python3 without
    python3-venv) a venv without pip and an outer pip ≥ 22.3 pointed at it with ``--python``.
    """
    base = getattr(sys, "_base_executable", sys.executable)
    made = subprocess.run([base, "-m", "venv", venv], capture_output=True, text=True, timeout=300, check=False)
    if made.returncode == 0:
        return [venv / "bin" / "python", "-m", "pip"]
    _run(base, "-m", "venv", "--without-pip", "--clear", venv)
    for outer in ([base, "-m", "pip"], [shutil.which("pip3") or "pip"]):
        if subprocess.run([*outer, "--version"], capture_output=True, check=False).returncode == 0:
            return [*outer, "--python", venv / "bin" / "python"]
    pytest.fail(f"no pip to install into a fresh venv: {base} has no ensurepip and there is no pip on PATH")


def _fresh_venv_with(dist: str, tmp_path: Path, *, also: tuple[str, ...] = ()) -> Path:
    """Build `dist`, vpo-core and `also`, make a stdlib venv, install `dist` and `also` with plain pip from the
    built artefacts only.

    Third-party dependencies are preinstalled offline from the lock (uv's cache), so that pip with
    ``--no-index`` resolves exactly what a release index would give it: the packages and vpo-core.
    """
    uv = _uv()
    dist_dir = tmp_path / "dist"
    for name in (dist, CORE, *also):
        _run(uv, "build", "--offline", "--quiet", "--package", name, "--out-dir", dist_dir, cwd=ROOT)
    version = _project(PROJECTS[dist])["version"]
    module = _module_name(dist)
    assert (dist_dir / f"{module}-{version}-py3-none-any.whl").is_file()
    assert (dist_dir / f"{module}-{version}.tar.gz").is_file()
    for name in (dist, CORE, *also):
        stem = f"{_module_name(name)}-{_project(PROJECTS[name])['version']}"
        _assert_artefacts_carry_the_license(dist_dir / f"{stem}-py3-none-any.whl", dist_dir / f"{stem}.tar.gz")

    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    pip = _make_venv(venv)
    lock = tmp_path / "pylock.toml"
    _run(uv, "export", "--frozen", "--quiet", "--package", dist, "--no-emit-workspace", "--no-default-groups",
         "--format", "pylock.toml", "--output-file", lock, cwd=ROOT)  # fmt: skip
    _run(uv, "pip", "install", "--offline", "--quiet", "--python", python, "-r", lock, cwd=tmp_path)
    _run(
        *pip, "install", "--no-index", "--find-links", dist_dir, "--quiet", dist, *also, cwd=tmp_path, env=_clean_env()
    )
    installed = _run(*pip, "list", "--format=json", cwd=tmp_path, env=_clean_env())
    versions = {p["name"]: p["version"] for p in json.loads(installed)}
    assert versions[dist] == version
    assert versions[CORE] == str(CORE_VERSION)
    return venv


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


@pytest.mark.slow
def test_env_maze_installs_standalone_with_plain_pip(tmp_path, fake_openai):
    venv = _fresh_venv_with("env-maze", tmp_path, also=(ENGINES,))  # vpo-engines' base install: `vpo-eval`
    env, python = _clean_env(), venv / "bin" / "python"
    installed = _run(python, "-c", "import importlib.metadata as m; print(sorted(d.name for d in m.distributions()))")
    assert "torch" not in installed  # numpy (and pip) is all it needs
    prompt = _run(venv / "bin" / "env-maze", "render", "split=test", "index=0", cwd=tmp_path, env=env)
    assert len(prompt) > 100
    api = (
        "import env_maze, vpo_core; env = vpo_core.make('maze-v1'); task = env.tasks('test')[0]; "
        "print(vpo_core.list_envs(), env.score(task, env.reference_completion(task)).tolist(), env_maze.__file__)"
    )
    out = _run(python, "-c", api, cwd=tmp_path, env=env)
    assert out.startswith("['maze-v1'] [[1.0, 1.0, 0.0, 1.0]]")
    assert str(venv) in out  # the installed wheel, not the checkout
    _vpo_eval_scores_a_served_model(venv, tmp_path, fake_openai)


def _vpo_eval_scores_a_served_model(venv: Path, tmp_path: Path, fake_openai) -> None:
    """The pip user's benchmark: ``vpo-eval`` of the installed wheel against a local OpenAI-compatible server."""
    import vpo_core

    maze = vpo_core.make("maze-v1")
    routes, scores = {}, []
    for task in maze.tasks("test")[:3]:
        routes[maze.render_prompt(task)[-1]["content"]] = maze.reference_completion(task)
        scores.append(float(maze.score(task, maze.reference_completion(task))[0] @ maze.reward_spec.w_star_array))
    server = fake_openai(lambda messages, n: [routes[messages[-1]["content"]]] * n)
    out_dir = tmp_path / "eval"
    cli = [venv / "bin" / "vpo-eval", "env=maze-v1", f"base_url={server.base_url}", "template_options=none", "tasks=3"]
    _run(*cli, "samples=2", f"out={out_dir}", "log_samples=true", cwd=tmp_path, env=_clean_env())
    results = json.loads((out_dir / "results.json").read_text())
    (row,) = results["rows"].values()
    assert row["metrics"]["best@1"] == pytest.approx(sum(scores) / 3)  # every sample is the reference route
    assert results["versions"]["env-maze"] == _project(PROJECTS["env-maze"])["version"]
    assert len((out_dir / row["samples"]).read_text().splitlines()) == 6
    assert (out_dir / row["pool"]).is_file()  # the saved pool, written by a numpy-only install too


@pytest.mark.slow
def test_env_musique_installs_standalone_with_plain_pip(tmp_path):
    venv = _fresh_venv_with("env-musique", tmp_path)
    env, python = _clean_env(), venv / "bin" / "python"
    data = PROJECTS["env-musique"] / "tests" / "data"
    help_text = _run(venv / "bin" / "env-musique", "--help", cwd=tmp_path, env=env)
    assert "render" in help_text
    assert "score" in help_text
    api = (
        "import sys, env_musique, vpo_core; "
        "env = vpo_core.make('musique-v1', data_dir=sys.argv[1], test_per_hop=1); "
        "task = env.tasks('test')[0]; R = env.score(task, env.reference_completion(task)); "
        "print(vpo_core.list_envs(), R.shape[0], float(R.max()), env_musique.__file__)"
    )
    out = _run(python, "-c", api, data, cwd=tmp_path, env=env)
    assert out.startswith("['musique-v1'] 1 1.0")
    assert str(venv) in out
