"""Every registered manifold's examples() against the shared contract (rfl.testing.manifold),
and how a manifold declares itself (registration, what it must implement)."""

import importlib

import numpy as np
import pytest

import rfl.manifolds.sphere
from rfl.manifolds import MANIFOLDS, Euclidean, Manifold, Sphere
from rfl.registry import RegistryError
from rfl.testing.manifold import ManifoldContract


class TestManifoldContract(ManifoldContract):
    """The whole registry: ``manifolds`` is left at None."""


class TestChosenInstances(ManifoldContract):
    """How a plug-in's test runs the contract on its own instances."""

    manifolds = [Sphere(4, "exp", "parallel"), Euclidean(2, 2)]


def _declare(name, drop=(), **body):
    """A throw-away manifold class: a flat R^2, without the maps in ``drop``, with ``body``."""
    maps = dict(inner=lambda self, x, u, v: (u * v).sum(-1), projection=lambda self, x, u: u,
                euclidean_to_riemannian_gradient=lambda self, x, g: g,
                exp=lambda self, x, u: x + u, random_point=lambda self, rng, n=1: np.zeros((n, 2)),
                distance_from_manifold=lambda self, x: np.zeros(x.shape[0]),
                examples=classmethod(lambda cls: []), TRANSPORTS=("identity",),
                transport_identity=lambda self, x, y, u: u)
    maps.update(body)
    for key in drop:
        del maps[key]
    return type("Toy", (Manifold,), {"name": name, **maps})


def test_a_named_subclass_registers_itself():
    try:
        toy = _declare("toy_registered")
        assert MANIFOLDS["toy_registered"] is toy
        assert toy.offers("log") is False and toy.offers("tangent_mean") is False
    finally:
        MANIFOLDS.remove("toy_registered")


def test_a_subclass_without_name_does_not_register():
    class Sphere2(Sphere):
        pass

    assert "Sphere2" not in [c.__name__ for _, c in MANIFOLDS.items()]
    assert MANIFOLDS["sphere"] is Sphere


@pytest.mark.parametrize("drop,body,missing", [(("exp",), {}, "not implement exp"),
                                               (("examples",), {}, "not implement examples"),
                                               (("transport_identity",), {}, "transport_identity"),
                                               ((), {"TRANSPORTS": ()}, "any transport")])
def test_a_declaration_names_what_it_lacks(drop, body, missing):
    with pytest.raises(TypeError, match=missing):
        _declare("toy_incomplete", drop, **body)
    assert "toy_incomplete" not in MANIFOLDS


def test_isometric_transports_must_be_transports():
    with pytest.raises(TypeError, match="ISOMETRIC_TRANSPORTS.*allowed: identity"):
        _declare("toy_isometric", ISOMETRIC_TRANSPORTS=("parallel",))


def test_a_second_class_cannot_take_a_name():
    with pytest.raises(RegistryError, match="claimed by both"):
        _declare("sphere")
    assert MANIFOLDS["sphere"] is Sphere


def test_reimporting_a_module_keeps_the_registry_usable():
    """importlib.reload defines the class again under the same qualified name: it replaces the
    old one instead of being refused as a second claim on the name."""
    try:
        importlib.reload(rfl.manifolds.sphere)
        assert MANIFOLDS["sphere"] is rfl.manifolds.sphere.Sphere is not Sphere
        assert MANIFOLDS["sphere"].offers("nearest_point")
    finally:                                     # the other tests hold the original class
        rfl.manifolds.sphere.Sphere = Sphere
        MANIFOLDS.add(Sphere)
    assert MANIFOLDS["sphere"] is Sphere
