"""Shared test contracts and reference implementations for rfl components and plug-ins."""
