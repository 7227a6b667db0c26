"""Data generators (synthetic problems) and loaders (School data)."""
