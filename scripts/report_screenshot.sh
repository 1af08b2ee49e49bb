#!/usr/bin/env bash
# Regenerates docs/report.png, the README's picture of `kvlayout report`: the report of the committed
# certificate rendered by headless Chromium (scripts/setup.sh installs it), one square's details open.
# Usage: scripts/report_screenshot.sh [KVLAYOUT_BINARY]   (default build/kvlayout)
set -euo pipefail
cd "$(dirname "$0")/.."
kvlayout=${1:-build/kvlayout}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$kvlayout" report --certificate proofs/certificate.json -o "$work/report.html"
# A square whose details show a counterexample: vllm-flash-nhd -> vllm-flash-nhd-tp2-r0 (SUBSET).
fragment=$(python3 - "$work/report.html" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r'href="#(r\d+)" data-grade="[A-Z_]+" data-source="vllm-flash-nhd" data-target="vllm-flash-nhd-tp2-r0"', text)
print(m.group(1) if m else "")
PY
)
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
  --window-size=1400,1000 --screenshot="$work/report.png" "file://$work/report.html#$fragment" 2>/dev/null
mkdir -p docs
cp "$work/report.png" docs/report.png
echo "wrote docs/report.png ($(stat -c %s docs/report.png) bytes) from the report of proofs/certificate.json"
