#!/bin/sh
# Installs the project, editable, with its dev extras, into the virtual environment VENV (made with PYTHON).
# Usage: scripts/install_venv.sh PYTHON VENV  (the Makefile's $(STAMP) recipe).
#
# uv installs the set in about 10 s where pip took about 55 s (pip 23 spends most of its 44 s of CPU reading and
# matching the wheel tags of the ~86,000 links on the index pages; uv downloads in parallel). uv is bootstrapped
# into the venv by the interpreter's own pip; where that fails (no pip, or no index uv can reach), pip installs
# as before.
set -eu
python=$1
venv=$2
bin=$venv/bin

test -x "$bin/python" || "$python" -m venv --without-pip "$venv"
if "$python" -m pip --python "$bin/python" install --quiet --disable-pip-version-check --no-compile uv \
    && "$bin/uv" pip install --quiet --python "$bin/python" -e '.[dev]'; then
    :
else
    echo "install_venv: uv could not install; installing with pip" >&2
    "$bin/python" -m pip --version >/dev/null 2>&1 || "$bin/python" -m ensurepip --default-pip >/dev/null
    "$bin/python" -m pip install --quiet --disable-pip-version-check --no-compile -e '.[dev]'
fi

# Bytecode now: where PYTHONDONTWRITEBYTECODE is set, every process would otherwise recompile each module it
# imports. pip compiled every file of every package (29 s of CPU); the packages' own test folders (scipy's,
# numpy's, sklearn's: a fifth of the files, never imported) are left out here, and the compiling runs on every
# core.
site=$("$bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$bin/python" -m compileall -q -j0 -x '/site-packages/.+/tests?/' "$site" advisor tui >/dev/null
