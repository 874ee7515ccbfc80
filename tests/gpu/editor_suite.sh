#!/usr/bin/env bash
# GPU suite of the editor loop: tests/e2e/gpu_editor.py drives `cutune lsp` with pytest-lsp's
# client (VS Code's and Neovim's capabilities) on the real CUDA worker. The machine needs the
# client's wheels in .whl-lsp/ (see docs/benchmarks.md for the pip download line).
#   CUTUNE=target/release/cutune bash tests/gpu/editor_suite.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
site="$(mktemp -d -t cutune-lsp-site.XXXXXX)"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl-lsp/*.whl > /dev/null
CUTUNE_BIN="$(realpath "${CUTUNE:-$repo/target/release/cutune}")" EDITOR_REPORT="$out/editor_gpu.json" PYTHONPATH="$site" \
  python3 -m pytest tests/e2e/gpu_editor.py -q -p no:cacheprovider "$@"
