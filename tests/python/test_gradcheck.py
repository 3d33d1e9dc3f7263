"""nanobragg.gradcheck and render(dtype=numpy.float64): the f64 image rounds to the float32
image; gradcheck passes on the real gradients (weights, a Python loss) and fails, naming the
components, on a gradient corrupted by hand."""
import numpy as np
import pytest

import nanobragg
from conftest import SCENE

FLAGS = SCENE + " -mosaic 0.4 -mosaic_dom 2 -phisteps 2 -osc 0.3 -twotheta 2"


@pytest.fixture(scope="module")
def sim():
    return nanobragg.Simulator.from_flags(FLAGS)


def test_float64_render_rounds_to_the_float32_image(sim):
    f64 = sim.render(dtype=np.float64)
    f32 = sim.render()
    assert f64.dtype == np.float64 and f64.shape == f32.shape
    # the same values before C's rounding (through the differentiable scene: to 1 ulp)
    assert np.allclose(f64.astype(np.float32), f32, rtol=3e-7, atol=1e-7 * f32.max())
    assert not np.array_equal(f64, f64.astype(np.float32).astype(np.float64)), "not rounded"
    # finite differences far below f32's resolution are smooth in f64
    moved = sim.with_parameters(distance=sim.parameters["distance"] * (1 + 1e-9))
    diff = moved.render(dtype="float64") - f64
    assert np.abs(diff).max() > 0 and np.abs(diff).max() < 1e-5 * f64.max()
    with pytest.raises(ValueError, match="float64"):
        sim.render(dtype=np.float64, engine="cpu", precision="f32")
    with pytest.raises(ValueError, match="int16"):
        sim.render(dtype=np.int16)


def test_gradcheck_passes_on_the_real_gradient(sim):
    report = nanobragg.gradcheck(sim)
    assert report.passed and bool(report), str(report)
    names = [c["name"] for c in report.checks]
    for name in ["distance", "Xbeam", "cell_a", "misset_z", "lambda", "Na", "mosaic", "twotheta"]:
        assert name in names
    distance = next(c for c in report.checks if c["name"] == "distance")
    assert distance["analytic"] != 0 and distance["relative_error"] < 1e-4
    assert "passed" in str(report)


def test_gradcheck_with_a_python_loss(sim):
    observed = sim.render().astype(np.float64) * 0.9 + 0.1

    def loss(image):  # half the Poisson deviance, and its gradient
        return float((image - observed - observed * np.log(image / observed)).sum() / 2), (1 - observed / image) / 2

    # the deviance's curvature at the faintest pixels (1e-7 photons) needs a short step in Ybeam:
    # its central difference converges as h² (3e-5 mm: 1e-4 relative error; 3e-6 mm: 1e-6)
    steps = {"distance": 1e-4, "Ybeam": 3e-6}
    report = nanobragg.gradcheck(sim, loss=loss, params=["distance", "Ybeam", "cell_b", "misset_x"], eps=steps)
    assert report.passed, str(report)
    assert [c["step"] for c in report.checks[:2]] == [1e-4, 3e-6]


def test_gradcheck_fails_on_a_gradient_corrupted_by_hand(sim):
    w = np.linspace(1, 2, sim.shape[0] * sim.shape[1]).reshape(sim.shape)
    assert nanobragg.gradcheck(sim, loss=w, params=["distance", "cell_c"]).passed

    def corrupted(image):  # value Σ w·I, but a gradient 2 % off on every other pixel
        g = w.copy()
        g.flat[::2] *= 1.02
        return float((w * image).sum()), g

    report = nanobragg.gradcheck(sim, loss=corrupted, params=["distance", "cell_c"])
    assert not report.passed and not bool(report)
    assert report.failures == ["distance", "cell_c"]
    assert "FAILED" in str(report)


def test_gradcheck_errors(sim):
    with pytest.raises(ValueError, match="distanse"):
        nanobragg.gradcheck(sim, params=["distanse"])
    with pytest.raises(ValueError, match="weights"):
        nanobragg.gradcheck(sim, loss=np.ones(3))
    with pytest.raises(ZeroDivisionError):
        nanobragg.gradcheck(sim, loss=lambda image: 1 / 0, params=["distance"])
    with pytest.raises(ValueError, match="gradient has shape"):
        nanobragg.gradcheck(sim, loss=lambda image: (0.0, np.ones(3)), params=["distance"])
