"""Placeholder: this domain is not implemented yet (see the package README)."""
