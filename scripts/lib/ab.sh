# Shared by the side-by-side benchmarks (bench-heap-profile.sh,
# bench-tls.sh): variants run alternately, one line of numbers per run in a
# results file, medians and ratios to the first variant as a markdown table.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wrk_rps_p99 WRK-OUTPUT: "REQ/S P99-MS" (wrk run with --latency).
wrk_rps_p99() {
    local rps p99
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$1")
    p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$1")
    echo "$rps $p99"
}

# ab_table RESULTS COLUMN...: RESULTS holds "VARIANT N N ..." lines; print
# each variant's medians under the COLUMN names (extra numbers ignored),
# with the ratio to the first variant's.
ab_table() {
    python3 - "$@" <<'PY'
import statistics, sys
path, cols = sys.argv[1], sys.argv[2:]
rows = {}
for line in open(path):
    v, *nums = line.split()
    rows.setdefault(v, []).append([float(x) for x in nums])
med = {v: [statistics.median(c) for c in zip(*r)] for v, r in rows.items()}
base = next(iter(med.values()))
print("| variant | " + " | ".join(cols) + " |")
print("| --- |" + " ---: |" * len(cols))
for i, (v, m) in enumerate(med.items()):
    cells = []
    for j in range(len(cols)):
        x = m[j]
        cell = f"{x:,.0f}" if x >= 100 else f"{x:.2f}"
        if i > 0 and base[j]:
            cell += f" ({x / base[j]:.3f}×)"
        cells.append(cell)
    print(f"| {v} | " + " | ".join(cells) + " |")
print(f"\n(medians of {len(next(iter(rows.values())))} runs each, alternating)")
PY
}
