"""env-musique."""
