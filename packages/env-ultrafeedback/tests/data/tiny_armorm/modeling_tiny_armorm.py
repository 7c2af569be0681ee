"""A tiny model with ArmoRM's interface, for tests: Llama backbone, linear head of 19 objectives at the last token.

Loaded as remote code (``trust_remote_code=True``, ``auto_map`` in its config), as ArmoRM's
``modeling_custom.py`` is, with its imports (``LLAMA_INPUTS_DOCSTRING``, gone from transformers 5, is
restored by the scorer). Like ArmoRM it reads the last token of each row as the one before the first
``config.pad_token_id`` (right padding) and returns ``rewards`` (batch, n_objectives) and ``score``.
"""

from dataclasses import dataclass

import torch
from torch import nn
from transformers import LlamaConfig, LlamaModel, LlamaPreTrainedModel
from transformers.models.llama.modeling_llama import LLAMA_INPUTS_DOCSTRING  # as ArmoRM's modeling_custom.py
from transformers.utils import ModelOutput, add_start_docstrings_to_model_forward


@dataclass
class TinyRewardOutput(ModelOutput):
    rewards: torch.FloatTensor | None = None
    score: torch.FloatTensor | None = None


class TinyArmoRM(LlamaPreTrainedModel):
    config_class = LlamaConfig

    def __init__(self, config):
        super().__init__(config)
        self.model = LlamaModel(config)
        self.regression_layer = nn.Linear(config.hidden_size, config.num_objectives, bias=False)
        self.post_init()

    @add_start_docstrings_to_model_forward(LLAMA_INPUTS_DOCSTRING)
    def forward(self, input_ids, attention_mask=None, **kwargs):
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        last = (torch.eq(input_ids, self.config.pad_token_id).int().argmax(-1) - 1) % input_ids.shape[-1]
        rewards = self.regression_layer(hidden[torch.arange(input_ids.shape[0]), last])
        return TinyRewardOutput(rewards=rewards, score=rewards.mean(-1, keepdim=True))
