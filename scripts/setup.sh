#!/usr/bin/env bash
# Installs kvlayout's build dependencies from Debian packages. Safe to run twice: it installs only what is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libz3-dev z3                 # the prover (libz3) and the z3 command that replays written SMT-LIB2 queries
  libboost-graph-dev
  nlohmann-json3-dev
  catch2                       # v2.13 on Debian 12
  libbenchmark-dev             # Google Benchmark, for bench/
  libssl-dev                   # libcrypto's SHA-256, for spec hashes in certificates
  clang libclang-rt-14-dev     # libFuzzer and clang's sanitizer runtimes, for scripts/fuzz.sh
  graphviz                     # dot: lays out the translation graph in kvlayout report (optional at run time)
  chromium                     # headless: the report's browser test and its README screenshot
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Python packages from PyPI: nanobind and scikit-build-core (the Python package's extension module and
# `pip install .`), pytest (its tests), numpy (its arrays, bench/peers.py). Only what is missing.
install_python_packages() {
  local wanted=() module
  for module in numpy:numpy nanobind:nanobind scikit_build_core:scikit-build-core pytest:pytest; do
    if ! python3 -c "import ${module%%:*}" >/dev/null 2>&1; then wanted+=("${module##*:}"); fi
  done
  if [ ${#wanted[@]} -gt 0 ]; then
    echo "setup: installing ${wanted[*]} (PyPI)"
    python3 -m pip install --quiet --disable-pip-version-check "${wanted[@]}"
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build dependencies are installed"
  install_python_packages
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_python_packages
