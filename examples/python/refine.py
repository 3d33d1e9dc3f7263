"""Refine a perturbed detector and crystal against an observed SMV image, with scipy.

    bash tests/run-all.sh          # or: pip install target/wheels/nanobragg-*.whl scipy
    python examples/python/refine.py

An "observed" image is simulated at the true parameters with Poisson noise and nanoBragg's ADC
offset, written as an SMV file as the binary's -noisefile would be, and read back with
`nanobragg.read_image` (photons = counts - 40). The fit starts 0.5 mm, 0.2 mm, 0.1° and 0.1 Å
away and minimises the Poisson loss with L-BFGS-B, using the exact gradient of
`loss_and_gradient` (`jac=True`). The vector is in the flags' units (mm, °, Å). It exits 1 when
a parameter is not recovered.
"""
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

import nanobragg

FLAGS = (
    "-default_F 100 -cell 70 80 90 90 90 90 -misset 10 20 30 -lambda 1.0 -N 4 "
    "-distance 80 -pixel 0.3 -detpixels 64 -mosaic 0.3 -mosaic_dom 2 -adc 40 -scale 1"
)
NAMES = ["distance", "Xbeam", "Ybeam", "misset_z", "cell_a"]
SHIFT = np.array([0.5, 0.2, -0.2, 0.1, 0.1])  # mm, mm, mm, °, Å
TOLERANCE = np.array([0.1, 0.02, 0.02, 0.02, 0.02])

truth = nanobragg.Simulator.from_flags(FLAGS)
noisy = np.random.default_rng(0).poisson(truth.render() * 20).astype(np.float32)
with tempfile.TemporaryDirectory() as d:
    path = Path(d) / "observed.img"
    truth.write_smv(path, noisy)  # counts = photons + 40 (-adc), scale 1
    observed, header = nanobragg.read_image(path, adc=40)
print(f"observed: {header['SIZE1']}x{header['SIZE2']} SMV, {observed.sum():.4g} photons")

x_true = truth.vector(NAMES)
start = truth.with_vector(NAMES, x_true + SHIFT).with_parameters(fluence=truth.parameters["fluence"] * 20)


def fun(x):
    return start.loss_and_gradient(observed, loss="poisson", parameters=NAMES, x=x)


result = minimize(fun, start.vector(NAMES), jac=True, method="L-BFGS-B")
print(f"{result.nit} iterations, loss {result.fun:.6g}")
for name, t, s, r in zip(NAMES, x_true, start.vector(NAMES), result.x):
    print(f"{name:>10}: true {t:9.4f}  start {s:9.4f}  refined {r:9.4f}")
errors = np.abs(result.x - x_true)
if not np.all(errors <= TOLERANCE):
    print("not recovered:", [n for n, e, t in zip(NAMES, errors, TOLERANCE) if e > t])
    sys.exit(1)
print("recovered every parameter")
