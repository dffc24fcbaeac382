#!/usr/bin/env bash
# The GPU example as one command on a device machine (see README.md, "Running it on a lent
# device"). Run from the repository root:
#
#     OUT=/some/empty/folder bash examples/gpu/device_check.sh
#
# 1. records the device and tool facts (queries only: nothing on the device is changed);
# 2. installs what kernel-evidence needs from examples/gpu/wheels/ with no package index
#    (pip install --no-index --find-links); kernel-evidence itself runs from src/;
# 3. runs examples/gpu/run.py into a scratch folder, under a hard 6.5-minute limit;
# 4. copies the small real outputs into $OUT (summary, table, packets, raw-page CSVs,
#    .ncu-rep and .xplane.pb files under a size cap) with a note of the tool versions.
#
# Never changes device settings: no clock locking, persistence, power limits or resets.

set -u -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${OUT:?set OUT to the folder whose files come back}"
WHEELS="${WHEELS:-$HERE/wheels}"
PY="${PYTHON:-python3}"
SCRATCH="${SCRATCH:-$(mktemp -d /tmp/ke-gpu-XXXXXX)}"
# the run is expected to take about 3 minutes on an H100; facts and installing take under a
# minute; the limits keep the whole script under 8 minutes
RUN_LIMIT_S="${RUN_LIMIT_S:-390}"
# files larger than this stay behind (the .ncu-rep of a full section set can be large)
FIXTURE_MAX_BYTES="${FIXTURE_MAX_BYTES:-4000000}"

mkdir -p "$OUT"
LOG="$OUT/device_check.log"
log() { echo "[device_check $(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }

log "repository $ROOT, python $("$PY" -c 'import sys; print(sys.version.split()[0])'), scratch $SCRATCH"

# ---------------------------------------------------------------- 1. facts (queries only)
{
  echo "## nvidia-smi"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,power.limit,compute_cap,persistence_mode --format=csv 2>&1
  echo "## ncu"
  (command -v ncu && ncu --version) 2>&1
  echo "## torch / triton"
  "$PY" -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__); p = torch.cuda.get_device_properties(0); print(p.name, "SMs", p.multi_processor_count, "L2", getattr(p, "L2_cache_size", None))' 2>&1
  echo "## jax"
  XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" -c 'import jax; print("jax", jax.__version__, jax.devices())' 2>&1
  echo "## installed (before)"
  "$PY" -m pip list 2>/dev/null | grep -i -E '^(pydantic|msgspec|zstandard|jsonschema|typer|rich|pyyaml|pyarrow|protobuf|ncu.report|numpy|torch|triton|jax|jaxlib) ' || true
} > "$OUT/device_facts.txt" 2>&1
log "facts in device_facts.txt"

# ---------------------------------------------------------------- 2. install, no index
if [ -d "$WHEELS" ]; then
  # only what is missing is installed; nothing already there (torch, numpy) is replaced
  "$PY" -m pip install --no-index --find-links "$WHEELS" --upgrade-strategy only-if-needed \
    "pydantic>=2.6" "jsonschema>=4.18" "msgspec>=0.18" "zstandard>=0.22" "typer>=0.12" "rich>=13" "pyyaml>=6" \
    >> "$LOG" 2>&1 || log "pip install of the core wheels failed (see above)"
  for optional in "protobuf>=4.21" "pyarrow>=14" ncu-report; do
    "$PY" -m pip install --no-index --find-links "$WHEELS" --upgrade-strategy only-if-needed "$optional" >> "$LOG" 2>&1 \
      || log "optional $optional not installed (no wheel for this python?)"
  done
else
  log "no wheels folder at $WHEELS: using what is installed"
fi
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PY" -c 'import kernel_evidence, pydantic, msgspec, zstandard, jsonschema, typer, rich, yaml' >> "$LOG" 2>&1; then
  log "kernel-evidence cannot be imported: see $LOG; stopping"
  exit 3
fi

# ---------------------------------------------------------------- 3. the run
log "run.py starts (limit ${RUN_LIMIT_S} s)"
timeout --kill-after=15 "$RUN_LIMIT_S" "$PY" "$HERE/run.py" --out "$SCRATCH/run" --force --deadline $((RUN_LIMIT_S - 150)) \
  > "$OUT/run.log" 2>&1
RC=$?
log "run.py exit $RC (0: every verdict ok, 1: a verdict is not, 2: usage, 124/137: over the limit)"
tail -n 30 "$OUT/run.log"

# ---------------------------------------------------------------- 4. small real outputs back
RUN="$SCRATCH/run"
for f in summary.json table.txt validate.txt validate.json audit.md report.html; do
  [ -f "$RUN/$f" ] && cp "$RUN/$f" "$OUT/"
done
[ -d "$RUN/packets" ] && mkdir -p "$OUT/packets" && cp "$RUN"/packets/*.json "$OUT/packets/" 2>/dev/null
mkdir -p "$OUT/fixtures"
copy_small() {
  local f="$1" size
  size=$(stat -c %s "$f" 2>/dev/null || echo 0)
  if [ "$size" -le "$FIXTURE_MAX_BYTES" ]; then
    cp "$f" "$OUT/fixtures/"
  else
    log "left behind (over $FIXTURE_MAX_BYTES bytes): $f ($size bytes)"
  fi
}
for f in "$RUN"/ncu/*.raw.csv "$RUN"/ncu/*.ncu-rep "$RUN"/ncu/*.log "$RUN"/jax/plugins/profile/*/*.xplane.pb "$RUN"/jax/jax.log; do
  [ -f "$f" ] && copy_small "$f"
done
{
  echo "Real outputs of examples/gpu/run.py, $(date -u +%Y-%m-%dT%H:%M:%SZ)."
  echo "Device and tool versions (device_facts.txt has the full queries):"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>&1
  (ncu --version 2>&1 | tail -n 1)
  "$PY" -c 'import torch, triton; print("torch", torch.__version__, "CUDA", torch.version.cuda, "triton", triton.__version__)' 2>&1
  XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__)' 2>&1
} > "$OUT/fixtures/VERSIONS.txt"
log "outputs copied into $OUT; done"
exit "$RC"
