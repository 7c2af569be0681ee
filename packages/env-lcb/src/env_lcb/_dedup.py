"""The de-duplication key of a program: its syntax tree without what never runs.

Two programs are copies when they differ only in comments, whitespace and layout, docstrings and other
bare constant statements (a string or ``...`` on a line of its own), or ``pass`` statements: none of
these changes what the sandbox executes, so none of them makes a second candidate (appending such
text cannot make copies look distinct to Multi-RLVR's de-duplication). Anything that can change
behaviour, however dead it looks (``if False: ...``, renamed variables), keeps programs distinct.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable

__all__ = ["program_key"]

_BODIES = ("body", "orelse", "finalbody")


def _is_noise(statement: ast.stmt) -> bool:
    """A statement that does nothing: ``pass`` or a bare constant (docstrings included)."""
    return isinstance(statement, ast.Pass) or (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    )


def _strip(tree: ast.AST) -> None:
    """Drop do-nothing statements from every statement list (an emptied list keeps one ``pass``)."""
    for node in ast.walk(tree):
        for name in _BODIES:
            statements = getattr(node, name, None)
            if not isinstance(statements, list) or not statements or not isinstance(statements[0], ast.stmt):
                continue
            kept = [s for s in statements if not _is_noise(s)]
            if not kept and not isinstance(node, ast.Module):
                kept = [ast.Pass()]
            setattr(node, name, kept)


def program_key(source: str) -> Hashable:
    """The normalised program: ``ast.dump`` of its tree without do-nothing statements.

    Source that does not parse (it fails every test anyway) is keyed by its whitespace-collapsed
    lower-case text.

    Args:
        source: Python source.

    Returns:
        A hashable key, equal for programs that differ only in what never runs.
    """
    try:
        tree = ast.parse(source)
        _strip(tree)
        return ast.dump(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return " ".join(source.lower().split())
