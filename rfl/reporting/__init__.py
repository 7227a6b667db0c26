"""Reporting: figures and tables drawn from result files only."""
