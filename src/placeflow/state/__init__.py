"""Run state."""
