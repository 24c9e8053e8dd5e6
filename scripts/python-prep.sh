#!/usr/bin/env bash
# Builds the Python test environment: a venv at $1 with the tests'
# requirements from PyPI and pepkit itself (crates/pep-py through maturin,
# unoptimised like the tests' pep). Cargo builds it in target/python, a
# target directory of its own, so it never waits on another cargo's lock.
# Usage: scripts/python-prep.sh VENV
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:?usage: scripts/python-prep.sh VENV}
python3 -m venv "$venv"
"$venv/bin/pip" install -q -r python/tests/requirements.txt
CARGO_TARGET_DIR="$PWD/target/python" MATURIN_PEP517_ARGS="--profile dev" \
  "$venv/bin/pip" install -q ./python
