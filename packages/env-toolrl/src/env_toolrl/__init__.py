"""env-toolrl."""
