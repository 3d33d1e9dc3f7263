"""The C suite's detector model from Python: noisify_main, add_noise and apply_psf against the
images C's noisify wrote (fixtures/golden/noisify, see make_noisify.py there)."""
import json
import shutil

import numpy as np
import pytest

import nanobragg
from conftest import ROOT

GOLDEN = ROOT / "fixtures" / "golden" / "noisify"
OUTPUTS = ["-intfile", "int.img", "-noisefile", "noise.img", "-pgmfile", "image.pgm"]


def case(name):
    cases = json.loads((GOLDEN / "cases.json").read_text())["cases"]
    return next(c for c in cases if c["name"] == name)


def smv(path, dtype="<u2"):
    return np.frombuffer(path.read_bytes()[512:], dtype=dtype).reshape(48, 64)


def spots():
    return np.fromfile(GOLDEN / "inputs" / "spots.f32", dtype="<f4").reshape(48, 64)


@pytest.mark.parametrize("name", ["defaults", "all_noise", "gauss_radius"])
def test_noisify_main_writes_cs_files(name, tmp_path, monkeypatch):
    shutil.copytree(GOLDEN / "inputs", tmp_path / "inputs")
    monkeypatch.chdir(tmp_path)
    assert nanobragg.noisify_main(case(name)["args"] + OUTPUTS) == 0
    for ours, c in [("int.img", "int.img"), ("noise.img", "noise.img"), ("image.pgm", "pgm")]:
        assert (tmp_path / ours).read_bytes() == (GOLDEN / f"{name}.{c}").read_bytes(), ours


def test_noisify_main_refuses_bad_flags(capfd):
    assert nanobragg.noisify_main(["-bin", "x.f32", "-bits", "12"]) == 9
    assert "-bits" in capfd.readouterr().err


def test_add_noise_is_cs_noise_image():
    # the all_noise case: -flicker 0.02 -readout 2 -calibration 0.05 -scale 10 -seed 8
    ideal, noisy = nanobragg.add_noise(spots(), seed=8, flicker=0.02, readout=2, calibration=0.05, scale=10)
    assert ideal.dtype == np.uint16 and noisy.dtype == np.uint16
    np.testing.assert_array_equal(ideal, smv(GOLDEN / "all_noise.int.img"))
    np.testing.assert_array_equal(noisy, smv(GOLDEN / "all_noise.noise.img"))


def test_add_noise_with_psf_and_32_bits():
    # fiber_radius: -psf fiber -psf_fwhm 80 -psf_radius 4 -seed 29; C keeps the FWHM (m) in a
    # float and divides by the 0.1 mm pixel
    fwhm = float(np.float32(80 / 1e6)) / 0.1e-3
    margin = np.fromfile(GOLDEN / "inputs" / "spots_margin.f32", dtype="<f4").reshape(48, 64)
    _, noisy = nanobragg.add_noise(margin, seed=29, psf="fiber", psf_fwhm=fwhm, psf_radius=4)
    np.testing.assert_array_equal(noisy, smv(GOLDEN / "fiber_radius.noise.img"))
    _, wide = nanobragg.add_noise(spots(), seed=13, scale=1000, bits=32)
    assert wide.dtype == np.uint32
    np.testing.assert_array_equal(wide, smv(GOLDEN / "bits_32.noise.img", "<u4"))


def test_apply_psf_spreads_a_lone_source_symmetrically():
    image = np.zeros((61, 61), dtype=np.float32)
    image[30, 30] = 5000.0
    for psf, fwhm in [("gauss", 3.0), ("fiber", 0.6)]:
        out = nanobragg.apply_psf(image, psf, fwhm)
        assert out.shape == image.shape and out.dtype == np.float32
        assert abs(out.sum() / 5000.0 - 1.0) < 0.02
        np.testing.assert_allclose(out, out[::-1, ::-1], rtol=1e-6)
        np.testing.assert_allclose(out, out.T, rtol=1e-6)
        assert out[30, 30] == out.max()
    with pytest.raises(ValueError, match="psf"):
        nanobragg.apply_psf(image, "box", 1.0)
