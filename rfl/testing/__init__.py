"""Shared test contracts that components (and plug-ins) run against themselves."""
