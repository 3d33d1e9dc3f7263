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


def nxmx_counts_and_photons(path):
    """The counts (the NXdata signal) and the float image (the detector's data_float) of an NXmx
    file, found by their NeXus classes, as h5py reads them."""
    import h5py

    def child(group, cls):
        return next(v for v in group.values() if v.attrs.get("NX_class", b"") in (cls, cls.encode()))

    with h5py.File(path, "r") as f:
        entry = child(f, "NXentry")
        data = child(entry, "NXdata")
        signal = data.attrs["signal"]
        counts = data[signal.decode() if isinstance(signal, bytes) else signal][()]
        detector = child(child(entry, "NXinstrument"), "NXdetector")
        return counts, detector["data_float"][()]


def test_nexus_writer_reads_back_with_h5py_as_the_binarys(binary, tmp_path):
    flags = SCENE.split()
    sim = nanobragg.Simulator.from_flags(flags)
    image = sim.render()
    sim.write_nexus(tmp_path / "py.nxs", image)
    run_binary(flags + ["-nexusfile", str(tmp_path / "c.nxs")], tmp_path, image.shape)
    counts, photons = nxmx_counts_and_photons(tmp_path / "py.nxs")
    want_counts, want_photons = nxmx_counts_and_photons(tmp_path / "c.nxs")
    assert counts.shape == (1, *image.shape) and counts.dtype == want_counts.dtype
    assert np.array_equal(counts, want_counts)
    assert np.array_equal(photons[0], image)
    assert np.array_equal(photons, want_photons)
    assert counts.max() > 40, "an image with spots"
