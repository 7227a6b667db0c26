"""Registry of data generators: problem name -> generate(rng, *inputs, **params) -> arrays.

A dataset's ``params`` hold the data parameters and, for some problems, parameters of the
problem itself (e.g. the subspace dimension r and lambda of the multitask problems); each
generator takes the former and ignores the latter.
"""

from __future__ import annotations

import numpy as np

from . import cfmspd, cpesph, garnet, kpca, mbcfsti, multitask, school


def _multitask(rng, S, N, m, r, d_min=10, d_max=50, noise=1e-6, lam=None):
    """Synthetic multitask data; ``lam`` belongs to the problem, not to the data."""
    return multitask.generate(rng, S=S, N=N, m=m, r=r, d_min=d_min, d_max=d_max, noise=noise)


def _school(rng, raw_path, S, N, train_fraction=0.8, r=None, lam=None):
    """One random train/test split of the School data (r, lam belong to the problem)."""
    X, y, schools = school.encode_features(school.parse_ilea(raw_path))
    split = school.split_school(X, y, schools, rng=rng, train_fraction=train_fraction,
                                n_agents=S, tasks_per_agent=N)
    return {k: np.asarray(v) for k, v in split.items()}


def _lsa(rng, setting, n_agents, oracle="pool", pool=garnet.DEFAULT_POOL, **params):
    """Federated TD(0) on Garnet MDPs; ``oracle`` belongs to the problem: the exact oracle
    draws no transitions (pool 0), the pool oracle ``pool`` per agent."""
    return garnet.generate(rng, n_agents, setting, pool=0 if oracle == "exact" else pool, **params)


GENERATORS = {
    "cpesph": cpesph.generate,
    "cfmspd": cfmspd.generate,
    "mbcfsti": mbcfsti.generate,
    "multitask": _multitask,
    "school": _school,
    "kpca": kpca.generate,
    "lsa": _lsa,
}
