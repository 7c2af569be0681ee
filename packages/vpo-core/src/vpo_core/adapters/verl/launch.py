"""``apps/train.py engine=verl env=<id> method=<m> model=<hf id or path> [overrides…] [--dry-run]``.

Exports the env's splits as veRL parquet, composes veRL's own ``ppo_trainer`` Hydra config with the
paper's settings for the (method × domain) cell (`recipes`) plus any ``section.key=value`` overrides,
and launches ``python -m verl.trainer.main_ppo`` with them. ``--dry-run`` prints the composed config
as YAML and exits. Every check (env, method, m, model path, config keys) happens before launch.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from vpo_core.methods import METHODS, get_method

__all__ = ["compose", "main"]

_OWN_KEYS = {"env", "method", "model", "m", "n", "n_gpus", "seed", "out", "num_weights", "alpha", "limit"}


def compose(overrides: list[str]) -> Any:
    """VeRL's ``ppo_trainer`` config composed with Hydra and `overrides`.

    Raises:
        ValueError: If an override names a key veRL's config does not have (or is malformed).
    """
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            return hydra_compose(config_name="ppo_trainer", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ValueError(
            f"veRL's ppo_trainer config rejected the overrides: {exc}. Check the key names (prefix a new key "
            "with '+', e.g. +algorithm.vpo.k=4)."
        ) from exc


def _parse(argv: list[str]) -> tuple[dict[str, str], list[str], bool]:
    own: dict[str, str] = {}
    passthrough: list[str] = []
    dry_run = False
    for arg in argv:
        if arg in ("--dry-run", "dry_run=true"):
            dry_run = True
            continue
        key, sep, value = arg.partition("=")
        if not sep:
            raise ValueError(f"arguments are key=value pairs or --dry-run, got {arg!r}.")
        if key in _OWN_KEYS:
            own[key] = value
        elif "." in key.lstrip("+~"):
            passthrough.append(arg)
        else:
            raise ValueError(
                f"unknown option {key!r}; ours are {sorted(_OWN_KEYS)}, and veRL config keys look like "
                "section.key=value (e.g. trainer.n_gpus_per_node=4)."
            )
    return own, passthrough, dry_run


def _check_model(model: str | None) -> None:
    if model is None:
        return
    # a Hub id is "name" or "org/name"; anything else is a path
    looks_local = model.startswith((".", "/", "~")) or model.count("/") > 1 or Path(model).exists()
    if looks_local and not Path(model).expanduser().is_dir():
        raise ValueError(
            f"model path {model!r} does not exist; pass a local HF model directory or a Hub id like Qwen/Qwen3-4B."
        )


def main(argv: list[str]) -> int:
    """Run (or with ``--dry-run`` print) one paper cell on veRL."""
    try:
        return _main(argv)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"error: {message}", file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    from omegaconf import OmegaConf

    import vpo_core
    from vpo_core.adapters.verl.export import export_split
    from vpo_core.adapters.verl.recipes import DOMAINS, overrides

    own, passthrough, dry_run = _parse(argv)
    env_id = own.get("env", "maze-v1")
    env = vpo_core.make(env_id)
    method_name = own.get("method", "vpo")
    if method_name not in METHODS:
        raise ValueError(f"unknown method {method_name!r}; choose one of {sorted(METHODS)}.")
    method = get_method(method_name)
    m = int(own.get("m", method.m))
    if method.mode == "multi" and m < 2:
        raise ValueError(f"method {method_name} writes m answers per completion; m must be >= 2, got {m}.")
    if method.mode == "single" and m != 1:
        raise ValueError(f"method {method_name} is single-answer; m must be 1, got {m}.")
    if env_id not in DOMAINS:
        raise ValueError(f"no paper settings for env {env_id!r}; domains: {sorted(DOMAINS)}.")
    _check_model(own.get("model"))
    out = Path(own.get("out", f"runs/verl/{env_id}-{method_name}"))
    train_file, val_file = out / "data" / "train.parquet", out / "data" / "test.parquet"
    cell = overrides(
        env_id,
        method_name,
        model=own.get("model"),
        train_files=str(train_file),
        val_files=str(val_file),
        n=int(own.get("n", 8)),
        n_gpus=int(own.get("n_gpus", 8)),
        d=env.reward_spec.dim,
    )
    options = [
        f"+algorithm.vpo.seed={int(own.get('seed', 0))}",
        f"+algorithm.vpo.num_weights={int(own.get('num_weights', 100))}",
        f"+algorithm.vpo.alpha={float(own.get('alpha', 1.0))}",
        f"trainer.default_local_dir={out / 'checkpoints'}",
    ]
    config = compose(cell + options + passthrough)
    if dry_run:
        print(OmegaConf.to_yaml(config))
        return 0
    limit = int(own["limit"]) if "limit" in own else None
    for split, path in (("train", train_file), ("test", val_file)):
        export_split(path, env_id, split, method_name, m=m, seed=int(own.get("seed", 0)), limit=limit)
    command = [sys.executable, "-m", "verl.trainer.main_ppo", *cell, *options, *passthrough]
    print("launching:", " ".join(command), file=sys.stderr)
    return subprocess.call(command)
