"""The model floor: what turns prompts into completions, below the engines and evaluation.

- `vpo_engines.models.policy`: `Policy`, a Hugging Face causal LM with its tokenizer (built locally or loaded
  from a directory): sampling, log-probabilities, the default model;
- `vpo_engines.models.decode`: the default model's sampler that shares each prompt's forward pass;
- `vpo_engines.models.chat`: chat rendering with the env's template options and the template's pre-fill;
- `vpo_engines.models.prefill`: the same pre-fill learned from a served model (standard library only);
- `vpo_core.sampling_settings`: `SamplingSettings`, how the completions of one use are sampled;
- `vpo_engines.models.vllm`, `vpo_engines.models.openai`: samplers over vLLM and an OpenAI-compatible server.

Every sampler has `vpo_core.evaluation.Sampler`'s interface. `policy` and `decode` need torch and
transformers (the ``local`` extra), `vllm` the vllm group; the others need only the standard library.
Nothing here imports an engine (`vpo_engines`).
"""
