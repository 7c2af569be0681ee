"""env-maze."""
