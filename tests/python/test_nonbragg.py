"""The C suite's nonBragg from Python: nonbragg_main, nonbragg_image, read_stol and
stol_structure_factor against the files C's nonBragg wrote (fixtures/golden/nonbragg, see
make_nonbragg.py there) and against numpy's own reader and polynomial fit."""
import json
import shutil

import numpy as np
import pytest

import nanobragg
from conftest import ROOT

GOLDEN = ROOT / "fixtures" / "golden" / "nonbragg"
TABLES = ROOT / "fixtures" / "stol"
OUTPUTS = ["-floatfile", "float.bin", "-intfile", "int.img", "-noisefile", "noise.img", "-pgmfile", "image.pgm"]


def case(name):
    cases = json.loads((GOLDEN / "cases.json").read_text())["cases"]
    return next(c for c in cases if c["name"] == name)


def with_tables(tmp_path, monkeypatch):
    shutil.copytree(TABLES, tmp_path / "stol")
    for extra in (GOLDEN / "inputs").iterdir():
        shutil.copy(extra, tmp_path / "stol" / extra.name)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("name", ["water", "tilted_beam", "divergence"])
def test_nonbragg_main_writes_cs_images(name, tmp_path, monkeypatch):
    with_tables(tmp_path, monkeypatch)
    assert nanobragg.nonbragg_main(OUTPUTS + case(name)["args"]) == 0
    for ours, c in [("float.bin", "float.bin"), ("int.img", "int.img"), ("noise.img", "noise.img")]:
        assert (tmp_path / ours).read_bytes() == (GOLDEN / f"{name}.{c}").read_bytes(), ours


@pytest.mark.parametrize("name", ["air", "fourstol", "oversample_point"])
def test_nonbragg_image_is_cs_float_image(name, tmp_path, monkeypatch):
    with_tables(tmp_path, monkeypatch)
    image = nanobragg.nonbragg_image(case(name)["args"])
    c = np.fromfile(GOLDEN / f"{name}.float.bin", dtype="<f4").reshape(40, 48)
    assert image.dtype == np.float32 and image.shape == (40, 48)
    assert np.array_equal(image, c)
    assert not (tmp_path / "floatimage.bin").exists()


def test_read_stol_agrees_with_numpy():
    stol, f = nanobragg.read_stol(TABLES / "water.stol")
    ref = np.loadtxt(TABLES / "water.stol")
    assert np.array_equal(stol, ref[:, 0]) and np.array_equal(f, ref[:, 1])
    q, fq = nanobragg.read_stol(TABLES / "water.stol", units="Q")
    assert np.allclose(q, ref[:, 0] / (4 * np.pi), rtol=1e-15, atol=0) and np.array_equal(fq, f)
    # comment lines are skipped, extra columns ignored
    ice, fice = nanobragg.read_stol(TABLES / "nanoice.stol")
    assert ice[0] == 0.0 and fice[0] == pytest.approx(1.34812) and np.all(np.diff(ice) > 0)


def test_structure_factor_is_the_cubic_through_four_points():
    stol, f = nanobragg.read_stol(TABLES / "air.stol")
    # at the table's points: the table's values
    assert np.allclose(nanobragg.stol_structure_factor(TABLES / "air.stol", stol[1:-2]), f[1:-2], rtol=1e-12)
    # between points k and k+1: numpy's cubic through points k-1 .. k+2
    for k in [3, 20, 57]:
        s = 0.37 * stol[k] + 0.63 * stol[k + 1]
        x, y = stol[k - 1 : k + 3], f[k - 1 : k + 3]
        want = np.polyval(np.polyfit(x - x[0], y, 3), s - x[0])
        got = nanobragg.stol_structure_factor(TABLES / "air.stol", [s])[0]
        assert got == pytest.approx(want, rel=1e-9)


def test_bad_tables_and_flags_are_refused(tmp_path, monkeypatch, capfd):
    bad = tmp_path / "bad.stol"
    bad.write_text("0 2.5\n0.2 2\n0.1 1\n")
    with pytest.raises(ValueError, match="bad.stol:3"):
        nanobragg.read_stol(bad)
    with pytest.raises(ValueError, match="units"):
        nanobragg.read_stol(TABLES / "water.stol", units="A")
    with pytest.raises(ValueError, match="shortwater.stol:7"):
        nanobragg.nonbragg_image(["-stol", str(TABLES / "shortwater.stol"), "-detpixels", "8"])
    with_tables(tmp_path, monkeypatch)
    assert nanobragg.nonbragg_main(["-stol", "stol/water.stol", "-thick", "-1"]) == 9
    assert "-thick" in capfd.readouterr().err
