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
"${pip[@]}" install --quiet --upgrade pip "setuptools>=77" wheel

packages=(-e ".[test]")
for dir in plugins/*/; do
  case "$(basename "$dir")" in _*) continue ;; esac  # _template is copied, not installed
  extras=()
  # a plugin's `test` extra holds what its tests need beyond the plugin (e.g. the MLflow server they start)
  if grep -q '^test = ' "$dir/pyproject.toml"; then extras+=(test); fi
  # rlm-bench's `ray` extra (Ray, ≈ 80 MB wheel + deps; `rlm bench sweep --executor ray`): its tests start a real
  # local Ray cluster, so every checkout gets it. Users choose: pip install "rlm-bench[ray]"
  if [ "$(basename "$dir")" = rlm-bench ]; then extras+=(ray); fi
  if [ ${#extras[@]} -gt 0 ]; then packages+=(-e "${dir%/}[$(IFS=,; echo "${extras[*]}")]"); else packages+=(-e "$dir"); fi
done
# rlm-provider-llamacpp depends on llama-cpp-python, which pip builds from source (≈ 5 min on 2 cores; once:
# pip leaves an installed llama-cpp-python alone, so re-running this script does not rebuild it). Its default
# build uses -march=native, which crashes on machines whose CPU advertises AVX-512/AMX that does not work; these
# flags build a portable AVX2 binary instead. CMAKE_ARGS only affects source builds (a prebuilt wheel ignores it);
# set it yourself to build differently (e.g. -DGGML_CUDA=on). Note pip's wheel cache does not key on CMAKE_ARGS:
# after a bad build, `pip cache remove llama_cpp_python` before re-installing.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF}"
# The C++ build uses every core (scikit-build-core passes this to CMake).
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"
if [ -d plugins/rlm-provider-llamacpp ] && ! .venv/bin/python -c 'import llama_cpp' 2>/dev/null; then
  echo "building llama-cpp-python from source for rlm-provider-llamacpp on $CMAKE_BUILD_PARALLEL_LEVEL cores" \
       "(about 5 minutes, once; pip is quiet meanwhile)…"
fi
# setuptools warns that an editable install of a flat layout (rlm_host/ at the top) could shadow imports: it is
# the layout we chose, and the warning is a wall of asterisks on every install.
PYTHONWARNINGS="ignore::UserWarning" "${pip[@]}" install --quiet "${packages[@]}"
"${pip[@]}" check
echo "installed into .venv: $(.venv/bin/rlm --version | tr '\n' ' ')"
# Arize Phoenix in its own .venv-phoenix (its pins conflict with .venv's): the otel sink's slow tests start it as a
# real trace backend. rlm does not need it.
bash scripts/install-phoenix.sh
