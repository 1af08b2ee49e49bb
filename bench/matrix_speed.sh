#!/usr/bin/env bash
# The full default matrix (proofs on production shapes + cross-check on small), timed by the CLI itself,
# on 1 and 2 jobs, with the process's peak memory. Usage: bench/matrix_speed.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
for jobs in 1 2; do
  log=$(mktemp)
  /usr/bin/time -v "$build/kvlayout" matrix --jobs "$jobs" > "$log.out" 2> "$log"
  rows=$(grep -E '^[0-9]+ rows in' "$log.out")
  positions=$(python3 - "$build" <<'PY'
import json, subprocess, sys
out = subprocess.run([sys.argv[1] + "/kvlayout", "matrix", "--json", "--jobs", "2"], capture_output=True, text=True).stdout
rows = json.loads(out)["rows"]
ms = sorted(r["prove_ms"] for r in rows)
print(f"positions checked {sum(r['positions_checked'] for r in rows)}, per-row proof median {ms[len(ms)//2]:.1f} ms, max {ms[-1]:.1f} ms")
PY
)
  rss=$(grep "Maximum resident set size" "$log" | awk '{print $6}')
  echo "jobs $jobs: $rows; peak RSS $((rss / 1024)) MiB; $positions"
  rm -f "$log" "$log.out"
done
