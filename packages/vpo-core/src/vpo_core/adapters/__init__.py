"""Engine adapters: the only modules that import torch, transformers or verl (lazily, via extras)."""
