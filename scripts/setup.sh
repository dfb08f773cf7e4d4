#!/usr/bin/env bash
# From a fresh Debian machine with the CUDA toolkit to kjit's main job: installs the Debian packages
# kjit needs when they are missing, builds, and runs the default config (the seed's hidden layer)
# on the GPU; on a machine with no GPU it says so and compiles it instead.
#   scripts/setup.sh            build + run        scripts/setup.sh --test   build + the test suite
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake ninja-build g++ nlohmann-json3-dev libcxxopts-dev doctest-dev libkainjow-mustache-dev libxxhash-dev zlib1g-dev
          python3-matplotlib python3-numpy python3-venv clang-format)
# The test suite also starts a single-node Slurm (tests/slurm) for the job-array recipe.
[ "${1:-}" = "--test" ] && packages+=(slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" > /dev/null
fi
[ -x /usr/local/cuda/bin/nvcc ] || [ -d /usr/local/cuda/include ] || { echo "setup: the CUDA toolkit is expected in /usr/local/cuda" >&2; exit 1; }
# `kjit sass` runs the toolkit's disassembler; a toolkit without one (CUDA's Debian images) gets
# NVIDIA's from PyPI, in the build folder's virtual environment, where CMake finds it.
if [ ! -x /usr/local/cuda/bin/nvdisasm ] && ! compgen -G "build/py/lib/python3*/site-packages/nvidia/cu*/bin/nvdisasm" > /dev/null; then
    [ -x build/py/bin/python ] || python3 -m venv build/py
    build/py/bin/pip install -q nvidia-cuda-nvdisasm
fi
python=()
if [ "${1:-}" = "--test" ]; then
    # The Python package's tests: its build requirements (pinned in pyproject.toml), pandas, tqdm,
    # pytest, nbclient and ipykernel to run the notebook, and Ray for the cluster's tests (a local
    # cluster of worker processes), from PyPI, in a virtual environment inside the build folder.
    [ -x build/py/bin/python ] || python3 -m venv build/py
    requires=$(build/py/bin/python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
    build/py/bin/pip install -q $requires pandas pytest tqdm nbclient ipykernel "ray==2.60.0"
    python=(-DKJIT_PYTHON=ON "-DPython_EXECUTABLE=$PWD/build/py/bin/python")
fi
# How long each step took is printed as it ends (README: "how long it takes").
minutes() { printf '%d min %02d s' $((SECONDS / 60)) $((SECONDS % 60)); }
echo "setup: packages and Python ready after $(minutes)"
cmake -S . -B build -G Ninja -DCUDAToolkit_ROOT=/usr/local/cuda ${KJIT_WERROR:+-DKJIT_WERROR=$KJIT_WERROR} "${python[@]}" > /dev/null
# Only what is run: the tests take minutes to build on a small machine.
if [ "${1:-}" = "--test" ]; then cmake --build build; else cmake --build build --target kjit; fi
echo "setup: built after $(minutes)"
if [ "${1:-}" = "--test" ]; then
    # unit + nvrtc run everywhere; gpu runs where there is a GPU and is reported as skipped elsewhere.
    status=0
    ctest --test-dir build --output-on-failure || status=$?
    # A skipped test's reason is in its output, which ctest keeps in its log rather than printing.
    grep -h "skipped:" build/Testing/Temporary/LastTest.log | sort -u || true
    echo "setup: tests done after $(minutes)"
    exit $status
elif build/kjit devices > /dev/null 2>&1; then
    build/kjit run
else
    echo "no GPU here ($(build/kjit devices 2>&1 | head -1)); compiling the default config instead:"
    build/kjit compile
fi
