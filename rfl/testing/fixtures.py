"""The generated files in the real data formats, kept importable here for the tests: they live
in ``rfl.data.generated`` (production code, the ``source: generated`` datasets, uses them; it
never imports ``rfl.testing``)."""

from rfl.data.generated import (NOTE, cifar10_batch_pickle, notes, random_spd, seed_from,  # noqa: F401
                                write_cells, write_cifar10_tarball, write_movielens_ratings,
                                write_pathmnist_mat, write_ratings_lines, write_tarball)
