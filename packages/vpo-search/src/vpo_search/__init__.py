"""vpo-search: test-time search (OpenEvolve) with a served checkpoint over any env that can evaluate programs."""

__version__ = "0.1.0"
