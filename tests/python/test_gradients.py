"""Gradients and derivative images against central differences of render() (f64 engine).

Tolerances: each gradient component within 2 % (relative to the largest of the parameter's
components, or 1e-6 of |g| where both are tiny); each derivative image with cosine ≥ 0.999
and norms within 2 % of the difference image.
"""
import numpy as np
import pytest

import nanobragg
from conftest import SCENE

# extras that give every parameter an effect: dispersion, mosaic, polarization, phi steps, 2θ
# (water is checked on its own: its background swamps the Bragg terms' f32 differences)
FLAGS = SCENE + " -dispersion 2 -dispsteps 3 -mosaic 0.5 -mosaic_dom 2 -polar 0.8 -phisteps 2 -osc 0.3 -twotheta 2"
WATER = SCENE + " -water 50"

# (parameter, step in its own unit): large enough for differences of f32 images
STEPS = {
    "cell": [1e-2] * 3 + [1e-4] * 3, "misset": 1e-4, "phi": 1e-4, "mosaic_spread": 1e-4,
    "distance": 1e-5, "beam_center": 1e-5, "detector_rotation": 1e-4, "twotheta": 1e-4,
    "lambda0": 1e-14, "fluence": 1e25, "n_cells": 1e-3, "polarization": 1e-2,
    "default_f": 1e-2, "dispersion": 1e-4,
}


@pytest.fixture(scope="module")
def scene():
    return nanobragg.Simulator.from_flags(FLAGS)


def central(sim, name, i, h, weights):
    h = np.broadcast_to(np.asarray(h, dtype=float), sim.parameters[name].shape)[i]
    p = sim.parameters[name]
    up, down = p.copy(), p.copy()
    up[i] += h
    down[i] -= h
    fu = (weights * sim.with_parameters(**{name: up}).render().astype(np.float64)).sum()
    fd = (weights * sim.with_parameters(**{name: down}).render().astype(np.float64)).sum()
    return (fu - fd) / (2 * h)


def check_gradients(scene, steps):
    rng = np.random.default_rng(1)
    weights = rng.uniform(0.5, 1.5, scene.shape)
    g = scene.gradient(weights)
    assert set(steps) <= set(g)
    for name, h in steps.items():
        analytic = g[name]
        numeric = np.array([central(scene, name, i, h, weights) for i in range(len(analytic))])
        scale = max(np.abs(numeric).max(), np.abs(analytic).max(), 1e-300)
        assert np.abs(analytic - numeric).max() <= 0.02 * scale, (name, analytic, numeric)


def test_every_gradient(scene):
    check_gradients(scene, STEPS)


def test_water_gradient():
    check_gradients(nanobragg.Simulator.from_flags(WATER), {"water_size": 1e-7, "fluence": 1e25})


# (derivative name, parameter, component, step in the parameter's unit, flag unit in it)
DERIVATIVES = [
    ("distance", "distance", 0, 1e-5, 1e-3),
    ("Xbeam", "beam_center", 0, 1e-5, 1e-3),
    ("Ybeam", "beam_center", 1, 1e-5, 1e-3),
    ("cell_a", "cell", 0, 1e-2, 1.0),
    ("cell_gamma", "cell", 5, 1e-4, np.pi / 180),
    ("misset_x", "misset", 0, 1e-4, np.pi / 180),
    ("misset_z", "misset", 2, 1e-4, np.pi / 180),
    ("phi", "phi", 0, 1e-4, np.pi / 180),
    ("lambda", "lambda0", 0, 1e-14, 1e-10),
    ("dispersion", "dispersion", 0, 1e-4, 1e-2),
    ("Na", "n_cells", 0, 1e-3, 1.0),
    ("mosaic", "mosaic_spread", 0, 1e-4, np.pi / 180),
    ("detector_rotx", "detector_rotation", 0, 1e-4, np.pi / 180),
    ("twotheta", "twotheta", 0, 1e-4, np.pi / 180),
    ("polar", "polarization", 0, 1e-2, 1.0),
    ("default_F", "default_f", 0, 1e-2, 1.0),
]


def test_derivative_images(scene):
    images = scene.derivatives([d[0] for d in DERIVATIVES])
    for name, param, i, h, unit in DERIVATIVES:
        p = scene.parameters[param]
        up, down = p.copy(), p.copy()
        up[i] += h
        down[i] -= h
        diff = (
            scene.with_parameters(**{param: up}).render().astype(np.float64)
            - scene.with_parameters(**{param: down}).render().astype(np.float64)
        ) / (2 * h) * unit
        d = images[name].astype(np.float64)
        assert d.shape == scene.shape
        cosine = (d * diff).sum() / (np.linalg.norm(d) * np.linalg.norm(diff))
        assert cosine >= 0.999, (name, cosine)
        assert abs(np.linalg.norm(d) / np.linalg.norm(diff) - 1) <= 0.02, name


def test_moved_copy_renders_as_its_flags():
    sim = nanobragg.Simulator.from_flags(SCENE)
    moved = sim.with_parameters(distance=0.1)
    flags = nanobragg.Simulator.from_flags(SCENE, distance=100.0)
    # the differentiable scene equals the host one to rounding
    a, b = moved.render(), flags.render()
    assert np.abs(a - b).max() <= 1e-6 * b.max()
