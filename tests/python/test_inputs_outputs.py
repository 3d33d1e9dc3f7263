"""Structure factors from numpy arrays and the SMV, CBF and NeXus writers, against the
binary given the same HKL file and the same flags (files equal byte for byte)."""
import numpy as np

import nanobragg
from conftest import SCENE, run_binary

H, K, L = np.meshgrid(np.arange(-3, 4), np.arange(-3, 4), np.arange(-3, 4), indexing="ij")
H, K, L = H.ravel(), K.ravel(), L.ravel()
F = 50.0 + 10.0 * np.cos(H + 2 * K + 3 * L)


def test_structure_factors_from_arrays(binary, tmp_path):
    hkl = tmp_path / "f.hkl"
    hkl.write_text("".join(f"{h} {k} {l} {float(f)!r}\n" for h, k, l, f in zip(H, K, L, F)))
    image = nanobragg.Simulator.from_flags(SCENE, structure_factors=(H, K, L, F)).render()
    expected = run_binary(SCENE.split() + ["-hkl", str(hkl)], tmp_path, image.shape)
    assert np.array_equal(image, expected)
    sim = nanobragg.Simulator.from_flags(SCENE, structure_factors=(H, K, L, F))
    assert sim.parameters["structure_factors"].size == 7 * 7 * 7


def test_writers_equal_the_binary(binary, tmp_path):
    flags = SCENE.split()
    sim = nanobragg.Simulator.from_flags(flags)
    image = sim.render()
    sim.write_smv(tmp_path / "py.img", image)
    sim.write_cbf(tmp_path / "py.cbf", image)
    sim.write_nexus(tmp_path / "py.nxs", image)
    run_binary(flags + ["-cbffile", str(tmp_path / "c.cbf")], tmp_path, image.shape)
    assert (tmp_path / "py.img").read_bytes() == (tmp_path / "int.img").read_bytes()
    assert (tmp_path / "py.cbf").read_bytes() == (tmp_path / "c.cbf").read_bytes()
    assert (tmp_path / "py.nxs").read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"
