"""env-lcb."""
