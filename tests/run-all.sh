#!/usr/bin/env bash
# Every test of this repository, Rust and Python, from a fresh clone: the README's test command.
#
# 1. a virtual environment in target/venv (works with an "externally managed" system Python,
#    PEP 668) with the Python tests' packages, fabio and h5py (tests/python/requirements.txt);
# 2. `cargo test --release --workspace` with that environment's python3 first on the PATH, so
#    the CBF and NeXus read-back checks run instead of skipping (`--workspace` takes the Python
#    package's dependencies into the feature resolution, so step 3 reuses this build's burn and
#    library: tests/integration/features.rs): the unit and integration tests, then the doc
#    tests. tests/external-crate is left out of the workspace build: the integration test
#    `outside_crate` builds and runs it as an outside crate would, so compiling it here too
#    would only repeat its contract. The examples are not built here (each is a release binary
#    of its own, minutes to compile, and none is a test): `.ci/run`'s
#    `cargo clippy --all-targets` checks that they compile;
# 3. the wheel, `maturin build --release` into target/wheels, installed into the environment;
# 4. pytest on tests/python (which also installs the wheel into a second, fresh environment).
#
# Needs: rustup's Rust, a C compiler (build-essential) and python3 with venv (Debian/Ubuntu:
# apt-get install python3-venv). NANOBRAGG_VENV moves the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${NANOBRAGG_VENV:-target/venv}"
if [ ! -x "$venv/bin/python" ]; then
    echo "== creating the virtual environment $venv"
    if ! python3 -m venv "$venv"; then
        rm -rf "$venv"
        echo "python3 -m venv failed: install python3-venv (Debian/Ubuntu: apt-get install python3-venv)" >&2
        exit 1
    fi
fi
venv="$(cd "$venv" && pwd)"
echo "== installing tests/python/requirements.txt into $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
export PATH="$venv/bin:$PATH"
# installed above: a missing one is a failure, not a skip
export NANOBRAGG_REQUIRE_FABIO=1 NANOBRAGG_REQUIRE_H5PY=1 NANOBRAGG_REQUIRE_PYTHON=1

echo "== cargo test --release --workspace --exclude nanobragg-external-user --tests"
cargo test --release --workspace --exclude nanobragg-external-user --tests
echo "== cargo test --release --workspace --exclude nanobragg-external-user --doc"
cargo test --release --workspace --exclude nanobragg-external-user --doc

echo "== the wheel: maturin build --release into target/wheels"
rm -f target/wheels/nanobragg-*.whl
maturin build --release --manifest-path python/Cargo.toml --out target/wheels
python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps target/wheels/nanobragg-*.whl

echo "== pytest tests/python"
python -m pytest -p no:cacheprovider -q tests/python
