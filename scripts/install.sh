#!/usr/bin/env bash
# Install rlm-host (with its test tools) and every plugin distribution under plugins/ into ./.venv.
# Idempotent: re-running it picks up new plugins. PYTHON chooses the interpreter (3.11 or newer).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: rlm needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip --disable-pip-version-check)
"${pip[@]}" install --quiet --upgrade pip "setuptools>=68" wheel

packages=(-e ".[test]")
for dir in plugins/*/; do
  case "$(basename "$dir")" in _*) continue ;; esac  # _template is copied, not installed
  packages+=(-e "$dir")
done
"${pip[@]}" install --quiet "${packages[@]}"
"${pip[@]}" check
echo "installed into .venv: $(.venv/bin/rlm --version | tr '\n' ' ')"
