# Sourced by this folder's H200 commands (run from the repository root, .deps and .whl carried):
# the carried wheels (Ray) installed, the GPU and the date said, and kjit built with its Python
# module; the targets to build are the arguments. Logs go to $OUT.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/build-gpu/python PYTHONUNBUFFERED=1 RAY_AUTH_MODE=disabled
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$PWD/.deps/usr -DKJIT_PYTHON=ON \
      -DPython_EXECUTABLE=$(command -v python3) > $OUT/cmake.txt 2>&1 || { tail -30 $OUT/cmake.txt; exit 1; }
cmake --build build-gpu --target "$@" > $OUT/build.txt 2>&1 || { grep -m5 -A5 error $OUT/build.txt; exit 1; }
