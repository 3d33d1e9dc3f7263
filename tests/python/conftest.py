"""Shared fixtures of the Python tests: the package, the binary, small scenes.

Every test runs: nothing is skipped (CI fails on a skip, see .ci/run). The binary is
target/release/nanobragg (NANOBRAGG_BIN overrides it); `cargo build --release` makes it.
"""
import os
import pathlib
import subprocess

import numpy as np
import pytest

import nanobragg

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("NANOBRAGG_BIN", ROOT / "target" / "release" / "nanobragg"))

# a small triclinic, misset crystal on a 32² detector: fast on two cores
SCENE = (
    "-default_F 100 -cell 70 80 90 85 95 100 -misset 10 20 30 -lambda 1.0 -N 6 "
    "-distance 80 -pixel 0.2 -detpixels 32 -oversample 1"
)


def run_binary(args, tmp_path, shape):
    """The binary's -floatfile for `args`, as float32 of `shape`."""
    out = tmp_path / "float.bin"
    subprocess.run(
        [str(BIN), *args, "-floatfile", str(out), "-nonoise", "-nopgm", "-intfile", str(tmp_path / "int.img")],
        check=True,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
    )
    return np.fromfile(out, dtype="<f4").reshape(shape)


@pytest.fixture(scope="session")
def binary():
    assert BIN.exists(), f"{BIN} not found: run cargo build --release first"
    return BIN


@pytest.fixture(scope="session")
def sim():
    return nanobragg.Simulator.from_flags(SCENE)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With NANOBRAGG_REQUIRE_PYTHON=1 (CI) a skipped test is a failure."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("NANOBRAGG_REQUIRE_PYTHON") == "1":
        report.outcome = "failed"
        report.longrepr = f"skipped, but NANOBRAGG_REQUIRE_PYTHON=1: {report.longrepr}"
