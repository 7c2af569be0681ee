r"""Reading programs out of model text: total, and linear in the text whatever it holds.

A fenced block opens with a line that starts with three backticks (```` ```python ```` for the
preferred kind) and closes at the next three backticks. Fences are found with forward ``str.find``
scans rather than regexes such as ``[^\n]*\n(.*?)`` after the fence, which restart at every
unclosed fence and so take time quadratic in the number of them.
"""

from __future__ import annotations

from vpo_core import Candidate, Mode
from vpo_core.multi_answer import extract_numbered

__all__ = ["extract_code", "parse_programs"]

_FENCE = "```"


def _fenced(text: str, opener: str, *, closed: bool) -> str | None:
    """The body of the first block opened by `opener` (the rest of its line is the info string).

    Args:
        text: The text.
        opener: ```` ```python ```` or ```` ``` ````.
        closed: Require a closing fence (else the body runs to the end of the text).

    Returns:
        The body, or None. Only the first opener can match: a later one has its line end (and any
        closing fence) after the first one's, so scanning once from the first is exact.
    """
    head = text.find(opener)
    if head < 0:
        return None
    newline = text.find("\n", head + len(opener))
    if newline < 0:
        return None
    if not closed:
        return text[newline + 1 :]
    tail = text.find(_FENCE, newline + 1)
    return None if tail < 0 else text[newline + 1 : tail]


def extract_code(text: str) -> str:
    """The program in a reply.

    The first closed ```python block, else an unterminated one, else any fenced block, else the raw text.
    """
    for opener, closed in ((_FENCE + "python", True), (_FENCE + "python", False), (_FENCE, True)):
        body = _fenced(text, opener, closed=closed)
        if body is not None:
            return body
    return text


def parse_programs(completion: str, mode: Mode, m: int) -> list[Candidate[str]]:
    """The candidates of a completion: one program (single) or one per ``<response_i>`` (multi).

    Args:
        completion: The model's text.
        mode: ``"single"`` or ``"multi"``.
        m: Number of answers.

    Returns:
        m candidates (1 in single mode); a reply without code has ``answer=None``.
    """
    bodies = [completion] if mode == "single" else extract_numbered(completion, "response", m)
    out = []
    for i, body in enumerate(bodies):
        code = extract_code(body or "").strip()
        out.append(Candidate(index=i, text=body or "", answer=code or None, error=None if code else "no code"))
    return out
