"""Refinement from Python: scipy.optimize.minimize(jac=True) on loss_and_gradient, and
scipy.optimize.least_squares on derivative images, recover perturbed distance, beam centre,
misset and cell (tolerances in the flags' units, written per test)."""
import numpy as np
from scipy.optimize import least_squares, minimize

import nanobragg

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
