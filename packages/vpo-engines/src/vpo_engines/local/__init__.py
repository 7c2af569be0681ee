"""The local engine: single-process RL with Hugging Face transformers on CPU or one GPU.

Needs the ``local`` extra (torch, transformers, tokenizers); ``train.main`` is what
``uv run vpo train`` runs by default.
"""
