"""The EUREQA prompts of the paper's appendix ("Domain Prompts / EUREQA")."""

from __future__ import annotations

__all__ = ["multi_prompt", "single_prompt"]

_HEADER = """\
You will be given a multi-hop reasoning question over a small narrative. The narrative contains masked \
entities (Person A, Country B, etc.) connected by relations. The leaf entity is revealed in the final sentence; \
you must back-chain to identify the rest.

Narrative:
{narrative}

The masked entities you must resolve (in order of introduction in the narrative):
{mask_list}

For each masked entity above, output its underlying canonical name. Use underscored Wikipedia-style names \
exactly as they appear in the source (e.g. `Robert_Rodriguez`, `32nd_European_Film_Awards`, \
`From_Dusk_till_Dawn:_The_Series`).

"""

_SINGLE_TAIL = """\
Replace each `...` below with the resolved entity (NOTHING else inside the tags --- just the canonical name):
<entity_A>...</entity_A>   (resolves {mask_a})
<entity_B>...</entity_B>   (resolves {mask_b})
<entity_C>...</entity_C>   (resolves {mask_c})
<entity_D>...</entity_D>   (resolves {mask_d})
<entity_E>...</entity_E>   (resolves {mask_e})

The answer to the question is whatever you put in <entity_A>."""

_MULTI_TAIL = """\
Provide {m} different reasoning chains, each wrapped in numbered tags <response_1>...</response_1> through \
<response_{m}>...</response_{m}>. Each chain must contain all 5 entity resolutions; replace each `...` with ONLY \
the resolved canonical name (underscored Wikipedia-style, no prose, no labels):
  <response_i>
    <entity_A>...</entity_A>   (resolves Person A --- this is the answer)
    <entity_B>...</entity_B>   (resolves the second mask)
    <entity_C>...</entity_C>   (resolves the third mask)
    <entity_D>...</entity_D>   (resolves the fourth mask)
    <entity_E>...</entity_E>   (resolves the fifth mask)
  </response_i>
Closing tags are required for every response and every entity. The {m} chains should be genuinely different \
attempts (e.g. different candidate resolutions, not paraphrases). The answer to the question is whatever you put \
in <entity_A> within each chain."""


def _header(sentences: tuple[str, ...], masks: tuple[str, ...]) -> str:
    return _HEADER.format(narrative="\n".join(sentences), mask_list="\n".join(f"  - {mask}" for mask in masks))


def single_prompt(sentences: tuple[str, ...], masks: tuple[str, ...]) -> str:
    """The single-solution prompt."""
    letters = dict(zip(("mask_a", "mask_b", "mask_c", "mask_d", "mask_e"), masks, strict=True))
    return _header(sentences, masks) + _SINGLE_TAIL.format(**letters)


def multi_prompt(sentences: tuple[str, ...], masks: tuple[str, ...], m: int) -> str:
    """The multi-solution rewrite: m chains in ``<response_i>`` tags."""
    return _header(sentences, masks) + _MULTI_TAIL.format(m=m)
