"""The imports run down the floors (issue 39): vpo-core imports no other workspace package, nothing in
vpo-engines outside an engine imports one, and no engine imports another.

Read from the source with `ast`, so imports inside functions, ``TYPE_CHECKING`` blocks and relative imports
count, and nothing is imported to check them: an engine whose extra is not installed is checked too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vpo_core
import vpo_engines

CORE = Path(vpo_core.__file__).parent
ENGINES_PACKAGE = Path(vpo_engines.__file__).parent
ENGINES = ("vpo_engines.local", "vpo_engines.trl", "vpo_engines.verl")
# The top-level modules of the other workspace packages (packages/*/src/*): vpo-core, the library, imports none.
ABOVE_CORE = {path.name for path in CORE.parents[2].glob("*/src/*") if path.is_dir() and path.name.isidentifier()} - {
    "vpo_core"
}


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at `path` (a package's ``__init__.py`` is the package)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """Every module `source` (the text of `module`) imports, as absolute dotted names.

    ``from a import b`` counts as ``a`` and as ``a.b`` (``b`` may be a submodule); relative imports are
    resolved against `module`; ``importlib.import_module("...")`` with a literal name counts too.
    """
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def engine_of(module: str) -> str | None:
    """``"vpo_engines.local"`` for ``vpo_engines.local.train``; None outside the engines."""
    return next((e for e in ENGINES if module == e or module.startswith(e + ".")), None)


def violations(module: str, imports: set[str]) -> list[str]:
    """The imports of `module` that run against the floors, each as ``"module -> imported"``."""
    bad: list[str] = []
    for name in sorted(imports):
        if module.split(".")[0] == "vpo_core":
            upward = name.split(".")[0] in ABOVE_CORE  # (a) the library imports no package built on it
        else:
            target, own = engine_of(name), engine_of(module)
            # (b) the floor under the engines imports none; (c) nor does an engine import another
            upward = target is not None and target != own
        if upward:
            bad.append(name)
    shown = [name for name in bad if name.rpartition(".")[0] not in bad]  # `from a import b`: a, not also a.b
    return [f"{module} -> {name}" for name in shown]


def source_modules() -> list[tuple[str, Path]]:
    return [(module_name(path, root), path) for root in (CORE, ENGINES_PACKAGE) for path in sorted(root.rglob("*.py"))]


def test_the_walk_sees_every_floor():
    names = {name for name, _ in source_modules()}
    for expected in (
        "vpo_engines.models.policy",
        "vpo_engines.runs",
        "vpo_core.evaluation.sampling",
        "vpo_engines.local.train",
        "vpo_engines.trl.train",
        "vpo_engines.verl.reward",
        "vpo_core.env",
    ):
        assert expected in names


def test_no_engine_imports_another_the_floor_imports_none_and_the_library_nothing_above_it():
    problems = []
    for name, path in source_modules():
        imports = imported_modules(path.read_text(), name, is_package=path.name == "__init__.py")
        problems += violations(name, imports)
    assert not problems, "imports that run against the floors (docs/architecture.md):\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        # one engine importing another, in every spelling
        ("vpo_engines.trl.train", "from vpo_engines.local.rl import rl_step", True),
        ("vpo_engines.trl.train", "def f():\n    import vpo_engines.verl.reward", True),
        ("vpo_engines.trl.train", "from ..local import train", True),
        ("vpo_engines.trl.train", "from vpo_engines import verl", True),
        ("vpo_engines.trl.train", "importlib.import_module('vpo_engines.local.rl')", True),
        # the floor under the engines importing one
        ("vpo_engines.models.policy", "if TYPE_CHECKING:\n    from vpo_engines.local.rl import Rollouts", True),
        ("vpo_engines.models.chat", "from ..local import rl", True),
        ("vpo_engines.evaluate", "from vpo_engines.trl import train", True),
        # the library importing anything built on it
        ("vpo_core.evaluation.sampling", "from vpo_engines.models import policy", True),
        ("vpo_core.env", "def f():\n    import vpo_lab.tabular", True),
        ("vpo_core.registry", "importlib.import_module('env_maze')", True),
        # allowed: inside one engine, and downward
        ("vpo_engines.trl.train", "from vpo_engines.trl.trainer import EnvScorer", False),
        ("vpo_engines.trl.train", "from .trainer import EnvScorer", False),
        ("vpo_engines.local", "from . import train", False),
        ("vpo_engines.verl.reward", "from vpo_engines.models.chat import template_prefill", False),
        ("vpo_core.evaluation.sampling", "from vpo_core.errors import ConfigError", False),
        ("vpo_engines.evaluate", "from vpo_engines.models.policy import load_policy", False),
        ("vpo_engines.local.train", "from vpo_core.batch import score_groups", False),
    ],
)
def test_the_check_finds_an_upward_or_sideways_import(module, source, expected):
    is_package = module == "vpo_engines.local"
    assert bool(violations(module, imported_modules(source, module, is_package=is_package))) is expected
