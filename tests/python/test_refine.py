"""Refinement from Python: scipy.optimize.minimize(jac=True) on loss_and_gradient, and
scipy.optimize.least_squares on derivative images, recover perturbed distance, beam centre,
misset and cell, and the detector PSF's FWHM and a background's scale (tolerances in the
flags' units, written per test)."""
import numpy as np
from scipy.optimize import least_squares, minimize

import nanobragg
from conftest import ROOT

FLAGS = "-default_F 100 -cell 70 80 90 90 90 90 -misset 10 20 30 -lambda 1.0 -N 4 -distance 80 -pixel 0.3 -detpixels 48 -mosaic 0.3 -mosaic_dom 2"
NAMES = ["distance", "Xbeam", "Ybeam", "misset_z", "cell_a"]
TRUE_SHIFT = np.array([0.6, 0.15, -0.12, 0.05, 0.05])  # mm, mm, mm, °, Å
TOLERANCE = np.array([0.05, 0.01, 0.01, 0.01, 0.01])


def problem():
    truth = nanobragg.Simulator.from_flags(FLAGS)
    observed = truth.render().astype(np.float64)
    x_true = truth.vector(NAMES)
    start = truth.with_vector(NAMES, x_true + TRUE_SHIFT)
    return start, observed, x_true


def test_minimize_with_loss_and_gradient():
    start, observed, x_true = problem()
    x0 = start.vector(NAMES)
    result = minimize(
        lambda x: start.loss_and_gradient(observed, loss="poisson", parameters=NAMES, x=x),
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 200},
    )
    assert np.all(np.abs(result.x - x_true) <= TOLERANCE), (result.x - x_true, result)


def test_least_squares_with_derivatives():
    start, observed, x_true = problem()

    def residuals(x):
        return (start.with_vector(NAMES, x).render().astype(np.float64) - observed).ravel()

    def jacobian(x):
        d = start.with_vector(NAMES, x).derivatives(NAMES)
        return np.stack([d[n].astype(np.float64).ravel() for n in NAMES], axis=1)

    result = least_squares(residuals, start.vector(NAMES), jac=jacobian, max_nfev=50)
    assert np.all(np.abs(result.x - x_true) <= TOLERANCE), (result.x - x_true)


def test_vector_round_trip():
    start, _, _ = problem()
    x = start.vector(NAMES)
    assert np.allclose(start.with_vector(NAMES, x).vector(NAMES), x, rtol=1e-12)


def test_the_refinement_example_recovers_its_parameters():
    """examples/python/refine.py, as a user runs it: exits 0 only when every parameter is
    recovered."""
    import subprocess
    import sys

    from conftest import ROOT

    out = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "refine.py")], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "recovered every parameter" in out.stdout


def response_problem(seed=7):
    """Spots plus water's background (nonbragg's image, scaled to 2 photons per pixel), drawn
    as Poisson counts by numpy and spread by noisify's PSF (a Gaussian of 1.5 pixels = 450 µm,
    radius 4): the C suite's chain, with an independent random generator."""
    psf = " -psf gauss -psf_fwhm 450 -psf_radius 4"
    truth = nanobragg.Simulator.from_flags(FLAGS + psf)
    stol = str(ROOT / "fixtures" / "stol" / "water.stol")
    bg = nanobragg.nonbragg_image(["-stol", stol, "-lambda", "1.0", "-distance", "80", "-pixel", "0.3", "-detpixels", "48", "-thick", "0.1"])
    bg = 2.0 * bg.astype(np.float64) / bg.mean()
    counts = np.random.default_rng(seed).poisson(truth.render().astype(np.float64) + bg)
    observed = nanobragg.apply_psf(counts.astype(np.float32), "gauss", 1.5, 4).astype(np.float64)
    start = nanobragg.Simulator.from_flags(FLAGS + psf.replace("450", "675"))
    return truth, start, observed, bg


RESPONSE = ["distance", "psf_fwhm", "background_scale"]


def test_response_gradient_is_the_central_difference():
    _, start, observed, bg = response_problem()
    x0 = start.vector(RESPONSE)
    assert np.isclose(x0[1], np.log(675.0)) and x0[2] == 0.0
    x0 = x0 + np.array([0.3, 0.0, np.log(0.6)])
    f = lambda x: start.loss_and_gradient(observed, parameters=RESPONSE, x=x, background=bg)
    _, g = f(x0)
    for i in range(3):
        h = np.zeros(3)
        h[i] = 1e-3
        fd = (f(x0 + h)[0] - f(x0 - h)[0]) / 2e-3
        assert abs(g[i] - fd) <= 1e-3 * abs(fd) + 1.0, (RESPONSE[i], g[i], fd)


def test_minimize_recovers_psf_fwhm_and_background_scale():
    truth, start, observed, bg = response_problem()
    x_true = truth.vector(RESPONSE)
    x0 = start.vector(RESPONSE) + np.array([0.5, 0.0, np.log(0.5)])
    result = minimize(
        lambda x: start.loss_and_gradient(observed, parameters=RESPONSE, x=x, background=bg),
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 200},
    )
    # 48² pixels: the FWHM to about 1 %, the scale to about 2 % (see the Rust test's σ)
    assert abs(result.x[0] - x_true[0]) < 0.05, result
    assert abs(np.exp(result.x[1]) / 450.0 - 1.0) < 0.05, np.exp(result.x[1])
    assert abs(np.exp(result.x[2]) - 1.0) < 0.06, np.exp(result.x[2])


def test_response_components_are_refused_where_they_cannot_act():
    import pytest

    plain = nanobragg.Simulator.from_flags(FLAGS)
    with pytest.raises(ValueError, match="psf_fwhm"):
        plain.vector(["psf_fwhm"])
    observed = plain.render().astype(np.float64)
    with pytest.raises(ValueError, match="background_scale"):
        plain.loss_and_gradient(observed, parameters=["background_scale"])
    with pytest.raises(ValueError, match="background"):
        plain.loss_and_gradient(observed, parameters=["distance"], background=np.ones(5))
    with pytest.raises(ValueError, match="psf_fwhm"):
        plain.with_vector(["psf_fwhm"], [1.0])
