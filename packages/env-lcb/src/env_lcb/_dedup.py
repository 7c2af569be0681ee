"""The de-duplication key of a program: its syntax tree without what has no observable effect.

Two programs are copies when they differ only in

* comments, whitespace and layout;
* docstrings and other bare constant statements (a string, a number or ``...`` on a line of its own);
* ``pass`` statements;
* assignments of a literal (a constant, or a tuple, list, set or dict of literals, or a negated number)
  to plain names that nothing else in the program mentions (``_ = 0``, ``unused = (1, 2)``).

None of these changes what the sandbox's tests observe (stdout, the functional result, the exit status
or the verdict), so none of them makes a second candidate: adding such text to a copy cannot make it
look distinct to Multi-RLVR's de-duplication. Anything that can change behaviour, however dead it
looks (``if False: ...``, renamed variables, an assignment of a call such as ``_ = input()``), keeps
programs distinct.

A name counts as mentioned when it occurs anywhere else in the program: as a name, an attribute, a
parameter, a keyword, an import, a function or class name, a ``global``/``nonlocal``, an exception or
``match`` capture, or as a word inside a string constant (``globals()["_"]``). Assignments are never
dropped from class bodies (they are attributes), nor for dunder names (``__builtins__``), for
``Solution`` or for the names the harness looks up (`program_key`'s ``keep``, the functional entry
point), nor anywhere in a program that reaches namespaces by name (``globals``, ``locals``, ``vars``,
``dir``, ``eval``, ``exec``, ``getattr``, ``__dict__``, frames, ``sys.modules``, ``inspect``, ``gc``,
...): in such a program an unread name can still be observed.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator

__all__ = ["program_key"]

_BODIES = ("body", "orelse", "finalbody")
# Identifiers through which a program can see its namespaces by name: where one occurs, no assignment is dropped.
_REFLECTION = frozenset(
    {
        *("globals", "locals", "vars", "dir", "eval", "exec", "compile", "breakpoint", "help", "__import__"),
        *("getattr", "setattr", "delattr", "hasattr", "attrgetter", "methodcaller", "__getattribute__"),
        *("__dict__", "__globals__", "__builtins__", "builtins", "__main__", "modules", "import_module"),
        *("_getframe", "currentframe", "f_globals", "f_locals", "f_back", "tb_frame", "gi_frame", "cr_frame"),
        *("inspect", "gc", "ctypes", "pickle", "copyreg", "traceback", "pdb", "code", "dis", "importlib"),
    }
)
_ALWAYS_KEEP = frozenset({"Solution"})  # the harness's functional entry class
# Where each kind of node holds identifiers (a name, a dotted name, or a list of names).
_NAME_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {
    ast.Name: ("id",),
    ast.Attribute: ("attr",),
    ast.arg: ("arg",),
    ast.keyword: ("arg",),
    ast.alias: ("name", "asname"),
    ast.ImportFrom: ("module",),
    ast.FunctionDef: ("name",),
    ast.AsyncFunctionDef: ("name",),
    ast.ClassDef: ("name",),
    ast.Global: ("names",),
    ast.Nonlocal: ("names",),
    ast.ExceptHandler: ("name",),
    ast.MatchAs: ("name",),
    ast.MatchStar: ("name",),
    ast.MatchMapping: ("rest",),
    ast.MatchClass: ("kwd_attrs",),
}


def _is_noise(statement: ast.stmt) -> bool:
    """A statement that does nothing: ``pass`` or a bare constant (docstrings included)."""
    return isinstance(statement, ast.Pass) or (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    )


def _is_literal(node: ast.expr) -> bool:
    """A value built from constants only: evaluating it reads no name, calls nothing and cannot fail."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int | float | complex)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) for k in node.keys) and all(_is_literal(v) for v in node.values)
    return False


def _identifiers(tree: ast.AST) -> Iterator[str]:
    """Every identifier the tree mentions (names, attributes, parameters, imports, definitions, captures)."""
    for node in ast.walk(tree):
        for name in _NAME_FIELDS.get(type(node), ()):
            value = getattr(node, name, None)
            if isinstance(value, str):
                yield from value.split(".")  # dotted imports: each part
            elif isinstance(value, list):
                yield from value


def _unused_literal_assignments(tree: ast.Module, keep: frozenset[str]) -> set[int]:
    """The ids of ``name = literal`` statements whose names nothing else in the program mentions."""
    candidates: list[ast.Assign] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]  # (node, directly in a class body), without recursion
    while stack:
        node, in_class = stack.pop()
        if (
            isinstance(node, ast.Assign)
            and not in_class
            and all(isinstance(t, ast.Name) for t in node.targets)
            and _is_literal(node.value)
        ):
            candidates.append(node)
        if isinstance(node, ast.ClassDef):
            in_class = True
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            in_class = False
        stack.extend((child, in_class) for child in ast.iter_child_nodes(node))
    if not candidates:
        return set()
    mentions = Counter(_identifiers(tree))
    if _REFLECTION.intersection(mentions):
        return set()
    # a target's own occurrences (as a store) do not count as mentions
    stores = Counter(t.id for c in candidates for t in c.targets if isinstance(t, ast.Name))
    strings = (node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str))
    words = {word for text in strings for word in re.findall(r"\w+", text)}

    def unread(name: str) -> bool:
        dunder = name.startswith("__") and name.endswith("__")
        return not dunder and name not in keep and mentions[name] == stores[name] and name not in words

    return {id(c) for c in candidates if all(unread(t.id) for t in c.targets if isinstance(t, ast.Name))}


def _strip(tree: ast.Module, keep: frozenset[str]) -> None:
    """Drop do-nothing statements from every statement list (an emptied list keeps one ``pass``)."""
    dropped = _unused_literal_assignments(tree, keep)
    for node in ast.walk(tree):
        for name in _BODIES:
            statements = getattr(node, name, None)
            if not isinstance(statements, list) or not statements or not isinstance(statements[0], ast.stmt):
                continue
            kept = [s for s in statements if not _is_noise(s) and id(s) not in dropped]
            if not kept and not isinstance(node, ast.Module):
                kept = [ast.Pass()]
            setattr(node, name, kept)


def program_key(source: str, keep: Iterable[str] = ()) -> Hashable:
    """The normalised program: ``ast.dump`` of its tree without statements that have no observable effect.

    Dropped: comments and layout, bare constant statements (docstrings included), ``pass``, and
    assignments of literals to names nothing else mentions (the module docstring lists the rule and
    its exceptions). Source that does not parse (it fails every test anyway) is keyed by its
    whitespace-collapsed lower-case text.

    Args:
        source: Python source.
        keep: Names the harness reads from the program's namespace (the functional entry point): an
            assignment to one of them is never dropped. ``Solution`` is always kept.

    Returns:
        A hashable key, equal for programs that differ only in what has no observable effect.
    """
    try:
        tree = ast.parse(source)
        _strip(tree, _ALWAYS_KEEP | frozenset(keep))
        return ast.dump(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return " ".join(source.lower().split())
