import torch

from vpo_core.types import Message
from vpo_engines.models.policy import Policy


class RecordingTokenizer:
    def __init__(self):
        self.calls = []

    def apply_chat_template(self, messages, **kwargs):
        self.calls.append(kwargs)
        return "thinking off" if kwargs.get("enable_thinking") is False else "thinking on"


def test_policy_renders_prompts_with_its_chat_template_options():
    tokenizer = RecordingTokenizer()
    policy = Policy(model=None, tokenizer=tokenizer, device=torch.device("cpu"))
    messages = [Message(role="user", content="hi")]
    assert policy.prompt_text(messages) == "thinking on"
    policy.chat_template_kwargs = {"enable_thinking": False}
    assert policy.prompt_text(messages) == "thinking off"
    assert tokenizer.calls[-1] == {"tokenize": False, "add_generation_prompt": True, "enable_thinking": False}
