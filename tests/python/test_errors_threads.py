"""Bad input raises ValueError with the binary's message; threads render and differentiate
at once with the serial results; the wgpu engine matches the CPU."""
import os
import threading

import numpy as np
import pytest

import nanobragg
from conftest import SCENE


@pytest.mark.parametrize(
    "flags, flag",
    [
        ("-cell 100 100 100 90 90 90 -lambda abc", "-lambda"),
        ("-cell 100 100 100 90 90 90 -no_such_flag", "-no_such_flag"),
        ("-cell 100 100 100 90 90 90 -distance -5", "-distance"),
    ],
)
def test_bad_flags_raise_value_error_naming_the_flag(flags, flag):
    with pytest.raises(ValueError, match=flag):
        nanobragg.Simulator.from_flags(flags)


def test_other_bad_input():
    sim = nanobragg.Simulator.from_flags(SCENE)
    with pytest.raises(ValueError, match="derivative"):
        sim.derivatives(["no_such_parameter"])
    with pytest.raises(ValueError, match="engine"):
        sim.render(engine="tpu")
    with pytest.raises(ValueError, match="pixels"):
        sim.gradient(np.ones(5))
    with pytest.raises(ValueError, match="parameter"):
        sim.with_parameters(distance=[1.0, 2.0])


def test_four_threads_equal_serial():
    sims = [nanobragg.Simulator.from_flags(SCENE, distance=70.0 + 5 * k) for k in range(4)]
    serial = [(s.render(), s.gradient()["distance"], s.derivatives(["Xbeam"])["Xbeam"]) for s in sims]
    results = [None] * 4

    def work(k):
        s = sims[k]
        results[k] = (s.render(), s.gradient()["distance"], s.derivatives(["Xbeam"])["Xbeam"])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, serial):
        for a, b in zip(got, want):
            assert np.array_equal(a, b)


def test_wgpu_matches_cpu():
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    sim = nanobragg.Simulator.from_flags(SCENE)
    cpu = sim.render()
    gpu = sim.render(engine="wgpu")
    # f32 shaders against the f64 CPU: 1e-4 of the image's maximum
    assert np.abs(gpu - cpu).max() <= 1e-4 * cpu.max()
