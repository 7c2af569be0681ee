"""env-musique: MuSiQue-Ans multi-hop QA with per-hop citation and answer-F1 vector rewards (``musique-v1``)."""

import importlib.metadata as _metadata

from env_musique._env import MUSIQUE_SPEC, MusiqueEnv, MusiqueTask
from env_musique._reward import answer_f1, parse_reply, score_reply

__all__ = ["MUSIQUE_SPEC", "MusiqueEnv", "MusiqueTask", "answer_f1", "parse_reply", "score_reply"]
try:  # single source: [project] version in pyproject.toml, read from the installed metadata
    __version__ = _metadata.version("env-musique")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree on sys.path, not installed
    __version__ = "0+unknown"
