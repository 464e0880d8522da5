#!/usr/bin/env bash
# Install Arize Phoenix (the trace UI and OTLP collector the otel sink's slow tests send runs to) into its own
# virtualenv ./.venv-phoenix. It has to be its own: Phoenix pins the OpenTelemetry SDK, protobuf and pydantic-ai
# at versions that conflict with .venv's (google-adk caps opentelemetry). rlm itself does not need it.
# Idempotent: does nothing when .venv-phoenix/bin/phoenix exists at the pinned version. PYTHON chooses the
# interpreter (3.11 or newer). About 850 MB.
set -euo pipefail
cd "$(dirname "$0")/.."

PHOENIX_VERSION=20.26.1  # the version the tests (plugins/rlm-sink-otel/tests/test_phoenix.py) are checked against
venv=.venv-phoenix

installed() {
  [ -x "$venv/bin/phoenix" ] &&
    [ "$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("arize-phoenix"))' 2>/dev/null)" \
      = "$PHOENIX_VERSION" ]
}
if installed; then
  echo "arize-phoenix $PHOENIX_VERSION already in $venv"
  exit 0
fi

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: Phoenix needs Python 3.11 or newer here; set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
echo "installing arize-phoenix $PHOENIX_VERSION into $venv (about 850 MB; pip is quiet meanwhile)…"
"${pip[@]}" install --quiet --upgrade pip
"${pip[@]}" install --quiet "arize-phoenix==$PHOENIX_VERSION"
"${pip[@]}" check
installed || { echo "error: $venv/bin/phoenix is missing after the install" >&2; exit 1; }
echo "installed into $venv: arize-phoenix $PHOENIX_VERSION"
