"""`EnvProfile.from_recipe` and `VerlRecipe.cited`: a paper domain's recipe, its sources, its training budgets."""

from __future__ import annotations

import pytest

from vpo_core.profile import PAPER_M, CollinearityRow, EnvProfile, Generation, VerlRecipe, cite

_SIZES = {"n_gpus": 1, "train_batch": 4, "mini_batch": 2, "micro_batch": 1, "prompt_length": 64, "epochs": 1}
RECIPE = VerlRecipe(model="some/model", response_single=300, response_multi=700, **_SIZES)


def test_training_budgets_are_the_recipes_response_lengths():
    profile = EnvProfile.from_recipe(RECIPE, train_temperature=0.8, eval=Generation(temperature=0.6), eval_samples=5)
    assert profile.train == Generation(temperature=0.8, top_p=1.0, max_new_tokens_single=300, max_new_tokens_multi=700)
    assert profile.recipe is RECIPE
    assert (profile.eval.temperature, profile.eval_samples) == (0.6, 5)
    for mode, m in (("single", 1), ("multi", 2), ("multi", 3), ("multi", 5)):
        assert profile.train.max_new_tokens(mode, m) == RECIPE.response_length_for(mode, m)


def test_a_recipe_sized_for_other_m_is_rescaled_to_paper_m():
    recipe = VerlRecipe(**{**RECIPE.__dict__, "response_multi": 1000, "response_multi_m": 5})
    train = EnvProfile.from_recipe(recipe, train_top_p=0.9).train
    assert (train.top_p, train.max_new_tokens_multi) == (0.9, 1000 * PAPER_M // 5)
    assert train.max_new_tokens("multi", 5) == recipe.response_length_for("multi", 5)


@pytest.mark.parametrize("field", ["train", "recipe"])
def test_train_and_recipe_come_from_the_recipe_only(field):
    with pytest.raises(TypeError, match=rf"from_recipe sets \['{field}'\]"):
        EnvProfile.from_recipe(RECIPE, **{field: None})


@pytest.mark.parametrize("env_id", ["maze-v1", "musique-v1", "eureqa-v1", "toolrl-v1", "lcb-v1", "ultrafeedback-v1"])
def test_every_paper_env_trains_with_its_recipes_budgets(env_id):
    import vpo_core
    from vpo_core.registry import resolve_env_class

    if env_id not in vpo_core.list_envs():
        pytest.skip(f"{env_id} is not installed")
    profile = resolve_env_class(env_id).profile
    assert profile.recipe is not None
    for mode, m in (("single", 1), ("multi", PAPER_M)):
        assert profile.train.max_new_tokens(mode, m) == profile.recipe.response_length_for(mode, m)


def test_a_cited_recipe_is_the_recipe_with_each_value_beside_its_source():
    cited = VerlRecipe.cited(
        cite("the model card", model="some/model"),
        cite("our cluster", n_gpus=1),
        cite("a table", train_batch=4, mini_batch=2, micro_batch=1),
        cite("a script", prompt_length=64, response_single=300, response_multi=700, epochs=1),
        extra_overrides=("trainer.x=1",),
    )
    sources = {"model": "the model card", "n_gpus": "our cluster"}
    sources |= dict.fromkeys(("train_batch", "mini_batch", "micro_batch"), "a table")
    sources |= dict.fromkeys(("prompt_length", "response_single", "response_multi", "epochs"), "a script")
    expected = VerlRecipe(**{**RECIPE.__dict__, "extra_overrides": ("trainer.x=1",), "sources": sources})
    assert cited == expected
    assert list(cited.sources) == list(sources)  # the citations' order


@pytest.mark.parametrize(
    ("citations", "uncited", "error", "match"),
    [
        ([cite("a", model="m"), cite("b", model="m")], {}, ValueError, r"fields \['model'\] are given twice"),
        ([cite("a", model="m")], {"model": "m"}, ValueError, r"fields \['model'\] are given twice"),
        ([cite("a", model="m")], {"sources": {}}, ValueError, "builds sources from the citations"),
        ([cite("a", model="m", n_gpu=1)], {}, TypeError, "n_gpu"),
    ],
)
def test_a_cited_recipe_refuses_a_value_given_twice_or_unknown(citations, uncited, error, match):
    with pytest.raises(error, match=match):
        VerlRecipe.cited(*citations, **uncited)


def test_a_citation_needs_a_source_and_values():
    with pytest.raises(ValueError, match="non-empty source"):
        cite("", model="m")
    with pytest.raises(ValueError, match="names no values"):
        cite("the paper")


def test_a_collinearity_row_takes_its_printed_columns_in_order_and_the_rest_by_name():
    row = CollinearityRow(1, "Maze", "4 reward feats (D=4)", 0.39, 0.37, 0.593, 0.432, 0.161)
    assert (row.rho_vpo, row.best_grpo, row.delta, row.outcome) == (0.39, 0.432, 0.161, "win")
    with pytest.raises(TypeError):
        CollinearityRow(1, "Maze", "dims", 0.39, 0.37, 0.593, 0.432, 0.161, "a source")  # type: ignore[misc]
