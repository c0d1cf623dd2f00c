"""Typed client and shared shapes for the place-data service."""
