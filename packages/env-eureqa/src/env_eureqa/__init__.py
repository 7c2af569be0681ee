"""env-eureqa."""
