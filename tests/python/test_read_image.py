"""nanobragg.read_image against readers written by others: the binary's SMV (read as raw bytes
after its header), miniCBF (fabio) and NeXus (h5py) files, its ADC offset and gain, and a
clear error for a file of none of the three formats."""
import fabio
import h5py
import numpy as np
import pytest

import nanobragg
from conftest import SCENE, run_binary


@pytest.fixture(scope="module")
def files(tmp_path_factory, binary):
    d = tmp_path_factory.mktemp("read_image")
    flags = SCENE.split() + ["-scale", "3", "-adc", "10"]
    shape = nanobragg.Simulator.from_flags(SCENE).shape
    run_binary(flags + ["-cbffile", str(d / "c.cbf"), "-nexusfile", str(d / "c.nxs")], d, shape)
    return d, shape


def test_smv_pixels_and_header(files):
    d, shape = files
    pixels, header = nanobragg.read_image(d / "int.img")
    raw = (d / "int.img").read_bytes()
    size = int(raw[: raw.index(b";")].split(b"=")[1])  # HEADER_BYTES
    want = np.frombuffer(raw[size:], dtype="<u2").reshape(shape)
    assert pixels.dtype == np.float64 and pixels.shape == shape
    assert np.array_equal(pixels, want)
    assert header["format"] == "smv" and header["SIZE1"] == str(shape[1])
    assert float(header["DISTANCE"]) == 80.0 and float(header["PIXEL_SIZE"]) == 0.2
    assert want.max() > 10, "an image with spots"
    # photons: (counts - adc) / gain
    photons, header = nanobragg.read_image(d / "int.img", adc=10, gain=3)
    assert np.allclose(photons, (want - 10.0) / 3.0, rtol=0, atol=1e-12)
    assert header["adc_offset"] == 10 and header["gain"] == 3


def test_cbf_pixels_equal_fabios(files):
    d, shape = files
    pixels, header = nanobragg.read_image(d / "c.cbf")
    want = fabio.open(str(d / "c.cbf")).data
    assert pixels.shape == want.shape == shape
    assert np.array_equal(pixels, want.astype(np.float64))
    assert header["format"] == "cbf" and "X-Binary-Size" in header


def test_nexus_pixels_equal_h5pys(files):
    d, shape = files
    pixels, header = nanobragg.read_image(d / "c.nxs")
    with h5py.File(d / "c.nxs", "r") as f:
        want = f["/entry/instrument/detector/data"][()]
    assert want.shape == (1, *shape)
    assert pixels.shape == shape  # one frame
    assert np.array_equal(pixels, want[0].astype(np.float64))
    assert header["format"] == "nexus" and header["incident_wavelength"].startswith("1")


def test_a_file_of_no_known_format_names_itself(tmp_path):
    bad = tmp_path / "image.tif"
    bad.write_bytes(b"II*\x00" + bytes(64))
    with pytest.raises(ValueError, match="image.tif.*not an SMV, miniCBF or NeXus"):
        nanobragg.read_image(bad)
    with pytest.raises(OSError, match="missing.img"):
        nanobragg.read_image(tmp_path / "missing.img")
    with pytest.raises(ValueError, match="gain"):
        nanobragg.read_image(bad, gain=0)
