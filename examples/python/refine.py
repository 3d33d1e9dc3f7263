"""Refine a perturbed detector and crystal with scipy from Python.

    python3 -m pip install ./python scipy
    python3 examples/python/refine.py

An "observed" image is rendered at the true parameters; the fit starts 0.5 mm, 0.2 mm, 0.1°
and 0.1 Å away and minimises the Poisson loss with L-BFGS-B, using the exact gradient of
`loss_and_gradient` (`jac=True`). The vector is in the flags' units (mm, °, Å).
"""
import numpy as np
from scipy.optimize import minimize

import nanobragg

FLAGS = (
    "-default_F 100 -cell 70 80 90 90 90 90 -misset 10 20 30 -lambda 1.0 -N 4 "
    "-distance 80 -pixel 0.3 -detpixels 64 -mosaic 0.3 -mosaic_dom 2"
)
NAMES = ["distance", "Xbeam", "Ybeam", "misset_z", "cell_a"]

truth = nanobragg.Simulator.from_flags(FLAGS)
observed = np.random.default_rng(0).poisson(truth.render() * 10).astype(np.float32) / 10
x_true = truth.vector(NAMES)
start = truth.with_vector(NAMES, x_true + np.array([0.5, 0.2, -0.2, 0.1, 0.1]))


def fun(x):
    return start.loss_and_gradient(observed, loss="poisson", parameters=NAMES, x=x)


result = minimize(fun, start.vector(NAMES), jac=True, method="L-BFGS-B")
print(f"{result.nit} iterations, loss {result.fun:.4g}")
for name, t, s, r in zip(NAMES, x_true, start.vector(NAMES), result.x):
    print(f"{name:>10}: true {t:9.4f}  start {s:9.4f}  refined {r:9.4f}")
