"""vpo-core's imports run down its floors (issue 39): no adapter imports another, and nothing outside the
adapters imports one.

Read from the source with `ast`, so imports inside functions, ``TYPE_CHECKING`` blocks and relative imports
count, and nothing is imported to check them: an engine whose extra is not installed is checked too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vpo_core

PACKAGE = Path(vpo_core.__file__).parent
ADAPTERS = "vpo_core.adapters"


def module_name(path: Path, root: Path = PACKAGE) -> str:
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


def adapter_of(module: str) -> str | None:
    """``"local"`` for ``vpo_core.adapters.local.train``; None outside the adapters (the package itself included)."""
    if not module.startswith(ADAPTERS + "."):
        return None
    return module[len(ADAPTERS) + 1 :].split(".")[0]


def violations(module: str, imports: set[str]) -> list[str]:
    """The imports of `module` that run against the floors, each as ``"module -> imported"``."""
    own = adapter_of(module)
    bad: list[str] = []
    for name in sorted(imports):
        if name != ADAPTERS and not name.startswith(ADAPTERS + "."):
            continue
        target = adapter_of(name)
        upward = own is None  # (b) the floor never imports an engine
        sideways = own is not None and target is not None and target != own  # (a) nor an engine another
        if upward or sideways:
            bad.append(name)
    shown = [name for name in bad if name.rpartition(".")[0] not in bad]  # `from a import b`: a, not also a.b
    return [f"{module} -> {name}" for name in shown]


def source_modules() -> list[tuple[str, Path]]:
    return [(module_name(path), path) for path in sorted(PACKAGE.rglob("*.py"))]


def test_the_walk_sees_every_floor():
    names = {name for name, _ in source_modules()}
    for expected in (
        "vpo_core.models.policy",
        "vpo_core.runs",
        "vpo_core.evaluation.sampling",
        "vpo_core.adapters.local.train",
        "vpo_core.adapters.trl.train",
        "vpo_core.adapters.verl.reward",
    ):
        assert expected in names


def test_no_adapter_imports_another_and_the_floor_imports_no_adapter():
    problems = []
    for name, path in source_modules():
        imports = imported_modules(path.read_text(), name, is_package=path.name == "__init__.py")
        problems += violations(name, imports)
    assert not problems, "imports that run against vpo-core's floors (docs/architecture.md):\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        # (a) one adapter importing another, in every spelling
        ("vpo_core.adapters.trl.train", "from vpo_core.adapters.local.rl import rl_step", True),
        ("vpo_core.adapters.trl.train", "def f():\n    import vpo_core.adapters.verl.reward", True),
        ("vpo_core.adapters.trl.train", "from ..local import train", True),
        ("vpo_core.adapters.trl.train", "from vpo_core.adapters import verl", True),
        ("vpo_core.adapters.trl.train", "importlib.import_module('vpo_core.adapters.local.rl')", True),
        # (b) the floor importing an engine
        ("vpo_core.evaluation.sampling", "from vpo_core.adapters.local import evaluate", True),
        ("vpo_core.models.policy", "if TYPE_CHECKING:\n    from vpo_core.adapters.local.rl import Rollouts", True),
        ("vpo_core.models.chat", "from ..adapters.local import rl", True),
        # allowed: inside one adapter, and downward
        ("vpo_core.adapters.trl.train", "from vpo_core.adapters.trl.trainer import EnvScorer", False),
        ("vpo_core.adapters.trl.train", "from .trainer import EnvScorer", False),
        ("vpo_core.adapters.local", "from . import train", False),
        ("vpo_core.adapters.verl.reward", "from vpo_core.models.chat import template_prefill", False),
        ("vpo_core.evaluation.sampling", "from vpo_core.errors import ConfigError", False),
    ],
)
def test_the_check_finds_an_upward_or_sideways_import(module, source, expected):
    is_package = module == "vpo_core.adapters.local"
    assert bool(violations(module, imported_modules(source, module, is_package=is_package))) is expected
