"""Data generators (synthetic problems) and loaders (School data); each problem's ``generate``
(``rfl.problems``) calls its generator here."""
