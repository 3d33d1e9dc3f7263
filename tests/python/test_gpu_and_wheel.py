"""GPU selection (nanobragg.gpu_adapters, select_gpu) in a process of its own, and the wheel
in target/wheels installed into a fresh virtual environment with no Rust toolchain on the
PATH, rendering the binary's image."""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import ROOT, SCENE, run_binary

GPU_SCRIPT = textwrap.dedent(
    """
    import sys, numpy as np, nanobragg
    try:
        adapters = nanobragg.gpu_adapters()
    except RuntimeError as e:
        print("NO-ADAPTER", e); sys.exit(0)
    if not adapters:
        print("NO-ADAPTER none listed"); sys.exit(0)
    try:
        nanobragg.select_gpu(len(adapters) + 5)
        sys.exit("an index past the list was accepted")
    except ValueError as e:
        assert "no adapter" in str(e) and adapters[0]["name"] in str(e), e
    # by a part of its name, any case, where one word names it alone; else by index
    word = adapters[0]["name"].split()[0]
    unique = sum(word.lower() in a["name"].lower() for a in adapters) == 1
    chosen = nanobragg.select_gpu(word.upper() if unique else 0)
    assert chosen == adapters[0], (chosen, adapters)
    assert nanobragg.select_gpu(0) == chosen  # the same choice again is fine
    sim = nanobragg.Simulator.from_flags(sys.argv[1])
    gpu, cpu = sim.render(engine="wgpu"), sim.render()
    assert np.abs(gpu - cpu).max() <= 1e-4 * cpu.max(), np.abs(gpu - cpu).max()
    if len(adapters) > 1:
        try:
            nanobragg.select_gpu(1)
            sys.exit("a second adapter was accepted after the first rendered")
        except ValueError as e:
            assert "one adapter" in str(e) or "already" in str(e), e
    print("OK", chosen["name"])
    """
)


def test_gpu_adapters_and_selection():
    out = subprocess.run([sys.executable, "-c", GPU_SCRIPT, SCENE], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    if out.stdout.startswith("NO-ADAPTER"):
        assert os.environ.get("NANOBRAGG_REQUIRE_WGPU") != "1", out.stdout
        pytest.skip(out.stdout.strip())
    assert out.stdout.startswith("OK"), out.stdout + out.stderr


def test_the_wheel_installs_without_rust_and_renders(binary, tmp_path):
    wheels = sorted((ROOT / "target" / "wheels").glob("nanobragg-*.whl"))
    assert wheels, "no wheel: maturin build --release --manifest-path python/Cargo.toml --out target/wheels"
    assert len(wheels) == 1, wheels
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # no Rust toolchain reachable: only the new environment and the system's directories
    path = os.pathsep.join([str(venv / "bin"), "/usr/bin", "/bin"])
    for tool in ["cargo", "rustc", "maturin"]:
        assert shutil.which(tool, path=path) is None, f"{tool} on the install's PATH"
    env = {"PATH": path, "HOME": os.environ.get("HOME", str(tmp_path)), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for key in ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CACHE_DIR", "SSL_CERT_FILE", "XDG_CACHE_HOME"]:
        if key in os.environ:
            env[key] = os.environ[key]
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--only-binary", ":all:", str(wheels[0])],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    out = tmp_path / "image.npy"
    script = f"import nanobragg, numpy; numpy.save({str(out)!r}, nanobragg.Simulator.from_flags({SCENE!r}).render())"
    run = subprocess.run([str(venv / "bin" / "python"), "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    image = np.load(out)
    assert np.array_equal(image, run_binary(SCENE.split(), tmp_path, image.shape))
