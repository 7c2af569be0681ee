"""A mechanism study without a language model: tabular policies over a task's enumerable outcomes.

When an env can list every outcome of a task (`TextEnv.outcome_table`), each training method's
incentive can be studied exactly: a softmax over the candidates stands in for the model (one slot
per answer, each slot conditioned on the earlier slots' picks), rollouts are drawn from it, the
method's advantages come from `vpo_core.compute_advantages` exactly as in LM training, and the exact
REINFORCE gradient of ``(1/G) Σ_g A_g log π(y_g)`` updates it with Adam. Nothing here knows a domain.

The input is the env's `vpo_core.types.OutcomeTable` per task. Modules: `table` (candidates with text
variants, start priors), `policy` (the tabular policy, its gradient and Adam), `train` (the RL loop),
`evaluate` (the paper's metrics per task), `study` (methods × seeds × starts, seed/task intervals,
tables).
"""

from vpo_lab.tabular.evaluate import METRICS, evaluate_policy
from vpo_lab.tabular.policy import TabularPolicy
from vpo_lab.tabular.study import StudyResult, run_study
from vpo_lab.tabular.table import Candidates, Start, stack_tables
from vpo_lab.tabular.train import AdvantageFn, train_policy

__all__ = [
    "METRICS",
    "AdvantageFn",
    "Candidates",
    "Start",
    "StudyResult",
    "TabularPolicy",
    "evaluate_policy",
    "run_study",
    "stack_tables",
    "train_policy",
]
