"""Registry of synthetic data generators: problem name -> generate(rng, **params) -> arrays."""

from . import cpesph

GENERATORS = {"cpesph": cpesph.generate}
