"""env-musique: MuSiQue-Ans multi-hop QA with per-hop citation and answer-F1 vector rewards (``musique-v1``)."""

from env_musique._env import MUSIQUE_SPEC, MusiqueEnv, MusiqueTask
from env_musique._reward import answer_f1, parse_reply, score_reply
from vpo_core.versions import installed_version

__all__ = ["MUSIQUE_SPEC", "MusiqueEnv", "MusiqueTask", "answer_f1", "parse_reply", "score_reply"]
__version__ = installed_version("env-musique")  # single source: [project] version in pyproject.toml
