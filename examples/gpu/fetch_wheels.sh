#!/usr/bin/env bash
# Download, on a machine with a package index, the wheels that device_check.sh installs on a
# device machine without one (see README.md). Usage:
#
#     bash examples/gpu/fetch_wheels.sh [PYTHON_VERSION ...]      # default: 3.10 3.11 3.12
#     WITH_PYARROW=1 bash examples/gpu/fetch_wheels.sh 3.11       # also pyarrow (~40 MB each)
#
# Wheels go to examples/gpu/wheels/ (git-ignored; carry it to the device). Only binary wheels
# for manylinux x86_64 are fetched, so nothing is built on the device.

set -eu -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="${WHEELS:-$HERE/wheels}"
PY="${PYTHON:-python3}"
VERSIONS=("$@")
[ ${#VERSIONS[@]} -eq 0 ] && VERSIONS=(3.10 3.11 3.12)
mkdir -p "$DEST"

CORE=("pydantic>=2.6" "jsonschema>=4.18" "msgspec>=0.18" "zstandard>=0.22" "typer>=0.12" "rich>=13" "pyyaml>=6")
OPTIONAL=("protobuf>=4.21" "ncu-report")
[ "${WITH_PYARROW:-0}" = 1 ] && OPTIONAL+=("pyarrow>=14")

for v in "${VERSIONS[@]}"; do
  echo "== python $v"
  "$PY" -m pip download --only-binary=:all: --platform manylinux2014_x86_64 --python-version "$v" \
    --dest "$DEST" "${CORE[@]}"
  # ncu-report's wheels are manylinux_2_25 and later (ncu also ships the module itself, under
  # its extras/python, which run.py finds); the optional ones may take those newer tags
  for pkg in "${OPTIONAL[@]}"; do
    "$PY" -m pip download --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
      --python-version "$v" --dest "$DEST" "$pkg" || echo "   (no wheel of $pkg for python $v: its step is skipped on the device)"
  done
done
du -sh "$DEST"
echo "carry $DEST (the device tool's carry: at most 64 MiB with everything else)"
