#!/usr/bin/env bash
# Create (or reuse) .venv and install bulkred into it, editable, with its test extras:
# the one environment both README commands use. The first run installs (a minute or
# two); later runs check and return at once, saying nothing. A system Python that
# refuses `pip install` (PEP 668, "externally-managed-environment", as on Debian and
# Ubuntu) is fine: only .venv is installed into.
#
#   bash tools/setup.sh          # then: .venv/bin/python tools/run_seed.py
#   PYTHON=python3.12 bash tools/setup.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.bulkred-installed
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

say() { echo "setup: $*" >&2; }

# What the install must leave importable, found without running any of it (fast);
# -I: neither the current directory nor PYTHONPATH may stand in for the install.
have_all() {
  "$VENV/bin/python" -I - "$PWD" <<'EOF' 2>/dev/null
import importlib.util, os, sys
names = ["bulkred_dialect", "xdsl", "numpy", "greenlet", "cuda.core", "filecheck", "lit", "pytest"]
specs = [importlib.util.find_spec(n) for n in names]
ours = specs[0] is not None and os.path.dirname(specs[0].origin) == os.path.join(sys.argv[1], "bulkred_dialect")
sys.exit(0 if ours and all(specs) else 1)
EOF
}

# pyproject.toml's hash and this checkout's path: a change of either means install again.
fingerprint() {
  "$VENV/bin/python" -c 'import hashlib, os, sys; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest(), os.getcwd())'
}

if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(fingerprint)" ] && have_all; then
  exit 0
fi

# pip's lines that say nothing about this install. On success only other warnings
# and errors are shown; on failure everything else is.
HARMLESS='^WARNING: Location .* is ignored|^WARNING: Running pip as the .root. user|^\[notice\]|^WARNING: Retrying|[Ee]ditable install|editable_wheel|SetuptoolsDeprecationWarning|^ *!!$|^ *\*{20,}$'
pip_quietly() {
  local log status
  log=$(mktemp)
  "$VENV/bin/python" -m pip "$@" -q >"$log" 2>&1
  status=$?
  if [ $status -ne 0 ]; then
    grep -Ev "$HARMLESS" "$log" >&2
  else
    grep -E '^(ERROR|WARNING)' "$log" | grep -Ev "$HARMLESS" >&2
  fi
  rm -f "$log"
  return $status
}

if ! command -v "$PY" >/dev/null; then
  say "no '$PY' here: bulkred needs Python 3.11 or newer; name one with PYTHON=python3.12 bash $0"
  exit 1
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  say "bulkred needs Python 3.11 or newer; '$PY' is $("$PY" --version 2>&1); name another with PYTHON=python3.12 bash $0"
  exit 1
fi

if ! "$VENV/bin/python" -c '' 2>/dev/null; then
  rm -rf "$VENV"
  say "creating $VENV with $("$PY" --version 2>&1) ($(command -v "$PY"))"
  if ! out=$("$PY" -m venv "$VENV" 2>&1); then
    rm -rf "$VENV"  # half made (no pip): the next run starts again
    echo "$out" >&2
    say "could not create $VENV. On Debian or Ubuntu: apt-get install python3-venv"
    exit 1
  fi
fi

say "installing bulkred (editable) and its test dependencies into $VENV (first run: a minute or two)"
# Editable installs of a pyproject.toml project need pip >= 21.3 (PEP 660).
if ! "$VENV/bin/python" -c 'import pip, sys; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (21, 3))' 2>/dev/null; then
  pip_quietly install --upgrade pip || { say "could not upgrade pip in $VENV"; exit 1; }
fi
if ! pip_quietly install -e ".[test]"; then
  say "failed: $VENV/bin/python -m pip install -e '.[test]' (pip's messages above)"
  exit 1
fi
if ! have_all; then
  say "installed, but bulkred_dialect, xdsl, numpy, greenlet, cuda.core, filecheck, lit or pytest is not importable from $VENV"
  exit 1
fi
fingerprint >"$STAMP"
say "done"
