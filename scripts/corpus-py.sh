#!/usr/bin/env bash
# Capture a corpus of real Python heap memory, as used for the engine speed
# runs in docs/zram.md ("Speed") and bench/results/:
#
#   scripts/corpus-py.sh ZMEM OUTPUT [MAX]      e.g. scripts/corpus-py.sh target/release/zmem /tmp/py96.corpus 96M
#
# Two python3 processes each build ~200 MiB of ordinary objects (a dict of
# 250 000 records with strings, floats and lists, a JSON string of 60 000 of
# them, a list of 10^6 integers), then `zmem capture --pid A,B --max MAX`
# samples their anonymous memory (the output is created 0600). The processes
# are stopped on exit, also on failure or Ctrl-C.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
zmem=$1 out=$2 max=${3:-96M}
dir=$(mktemp -d /tmp/zmem-corpus-py.XXXXXX)
pids=()
cleanup() {
    [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM
cat >"$dir/hold.py" <<'PY'
import json, random, sys, time
random.seed(int(sys.argv[1]))
recs = {}
for i in range(250000):
    recs[f"user:{i:07d}"] = {
        "name": "".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(5, 14))),
        "score": random.random() * 1000,
        "tags": [random.randint(0, 50) for _ in range(random.randint(1, 6))],
        "email": f"u{i}@example.{random.choice(['com', 'org', 'net'])}",
    }
blob = json.dumps(list(recs.values())[:60000])
ints = list(range(10**6))
print("ready", flush=True)
time.sleep(3600)
PY
for seed in 1 2; do
    python3 "$dir/hold.py" "$seed" >"$dir/ready.$seed" &
    pids+=($!)
done
for _ in $(seq 120); do
    [ "$(cat "$dir"/ready.* 2>/dev/null | grep -c ready)" = 2 ] && break
    sleep 1
done
[ "$(cat "$dir"/ready.* | grep -c ready)" = 2 ] || { echo "the python processes did not get ready" >&2; exit 1; }
"$zmem" capture --pid "$(IFS=,; echo "${pids[*]}")" --max "$max" -o "$out"
