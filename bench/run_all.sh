#!/usr/bin/env bash
# Run every benchmark in sequence and keep each JSON report in bench/results/.
# Needs: PostgreSQL on 127.0.0.1:5432 (database "test"), coreutils, moto (dev extra),
# and the ADK environment (`python bench/bench_adk.py --setup` once).
# Takes about 6-15 minutes on 2 cores; progress and tables go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
run() {
    local script=$1 report=$2
    shift 2
    echo "== $report" >&2
    local started=$SECONDS
    "$PY" "bench/$script.py" "$@" --out "$OUT/$report.json" >/dev/null
    echo "== $report took $((SECONDS - started)) s" >&2
}
run bench_attach bench_attach
if [ -d /dev/shm ]; then
    # The same attach benchmark where fsync costs nothing: what remains is CPU.
    run bench_attach bench_attach_tmpfs --dir /dev/shm
fi
run bench_attach_s3 bench_attach_s3
run bench_adk bench_adk
run bench_adk_service bench_adk_service
run bench_resolve bench_resolve
run bench_dedup bench_dedup
run bench_large_file bench_large_file
run bench_concurrency bench_concurrency
run bench_extract_cache bench_extract_cache
run bench_ocr bench_ocr
run bench_bounded_reads bench_bounded_reads
