#!/usr/bin/env bash
# Issue 24's "fresh machine" check, as CI runs it after scripts/setup.sh: `pip install .` into a new
# virtual environment (its build requirements, pinned in pyproject.toml, from PyPI), then the
# installed package imports and makes CUDA with NVRTC, and the kjit command it installed runs.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d /tmp/kjit-pip-check.XXXXXX)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q .
echo "pip install .: $SECONDS s"
config=$PWD/configs/hidden_layer.json
cd "$venv"  # not the source tree: the installed package is what imports
"$venv/bin/python" - "$config" "$venv/cache" <<'PY'
import sys
import kjit
source = kjit.Session(cache_dir=sys.argv[2]).emit(sys.argv[1])
assert 'extern "C" __global__' in source
# Outside the repository, with the venv not activated: the package's own configs by name, and the
# kjit command found beside this Python.
assert kjit.Session(cache_dir=sys.argv[2]).emit("softmax").startswith("//")
import os
assert kjit._command() == os.path.join(os.path.dirname(sys.executable), "kjit"), kjit._command()
print("pip install .: import kjit", kjit.__version__, "emits", len(source.splitlines()), "lines of CUDA")
PY
"$venv/bin/kjit" --version
