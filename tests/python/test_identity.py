"""render() equals the binary's -floatfile bit for bit: a flat detector, a panel file, a shot."""
import numpy as np

import nanobragg
from conftest import ROOT, SCENE, run_binary


def test_flat_detector(binary, tmp_path):
    sim = nanobragg.Simulator.from_flags(SCENE)
    image = sim.render()
    assert image.shape == (32, 32) and image.dtype == np.float32
    expected = run_binary(SCENE.split(), tmp_path, image.shape)
    assert np.array_equal(image, expected)  # bit for bit


def test_keyword_overrides_are_flags(binary, tmp_path):
    sim = nanobragg.Simulator.from_flags(SCENE.split(), distance=100.0, Xbeam=3.0, Ybeam=3.5, nopolar=True)
    image = sim.render()
    expected = run_binary(SCENE.split() + ["-distance", "100", "-Xbeam", "3.0", "-Ybeam", "3.5", "-nopolar"], tmp_path, image.shape)
    assert np.array_equal(image, expected)


def test_in_process_main_equals_binary(binary, tmp_path):
    out = tmp_path / "main.bin"
    status = nanobragg.main(SCENE.split() + ["-floatfile", str(out), "-nonoise", "-nopgm", "-intfile", str(tmp_path / "i.img")])
    assert status == 0
    expected = run_binary(SCENE.split(), tmp_path, (32, 32))
    assert np.array_equal(np.fromfile(out, dtype="<f4").reshape(32, 32), expected)
    assert nanobragg.main(["-lambda", "nope"]) == 9


def test_statistics_beside_the_image():
    image, stats = nanobragg.Simulator.from_flags(SCENE).render(statistics=True)
    assert np.isclose(stats["max_I"], image.max(), rtol=1e-6)
    assert np.isclose(stats["mean"], image.astype(np.float64).mean(), rtol=1e-9)


def test_panel_file(binary, tmp_path):
    flags = (
        "-default_F 100 -cell 70 80 90 90 90 90 -misset 10 20 30 -lambda 1.0 -N 6 "
        f"-detector_expt {ROOT / 'fixtures' / 'panels' / 'four_tilted.expt'}"
    ).split()
    image = nanobragg.Simulator.from_flags(flags).render()
    assert image.ndim == 3 and image.shape[0] == 4
    expected = run_binary(flags, tmp_path, image.shape)
    assert np.array_equal(image, expected)


def test_shots(binary, tmp_path):
    """render_shots of (n, 3, 3) matrices equals the binary given each as a -mat file."""
    flags = "-default_F 100 -cell 70 80 90 90 90 90 -lambda 1.0 -N 6 -distance 80 -pixel 0.2 -detpixels 32".split()
    rng = np.random.default_rng(3)
    base = np.diag([1 / 70, 1 / 80, 1 / 90])  # a*, b*, c* (Å⁻¹) times λ = 1 Å
    mats = []
    for _ in range(2):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        mats.append(q @ base)
    mats = np.array(mats)
    images = nanobragg.Simulator.from_flags(flags).render_shots(mats)
    assert images.shape == (2, 32, 32)
    for k, m in enumerate(mats):
        mat = tmp_path / f"shot{k}.mat"
        mat.write_text("\n".join(" ".join(repr(float(v)) for v in row) for row in m) + "\n")
        expected = run_binary(flags + ["-mat", str(mat)], tmp_path, (32, 32))
        assert np.array_equal(images[k], expected)
