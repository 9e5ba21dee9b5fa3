#!/usr/bin/env bash
# Joining and leaving under load (docs/benchmarks.md, "Joining and
# leaving"): three real nodes holding MV_KEYS keys of 100 B (default
# 200,000); `strata load --check` offers MV_RATE req/s (default 2000) of a
# mixed load for MV_LOAD_S seconds (default 120); a fourth node joins at
# 20 s, the first member leaves 20 s after the join is done. Prints keys
# moved against the ideal, duration, the foreground's p99 before and
# during each change, and the checker's verdict.
#
#   scripts/bench-membership.sh
#   MV_KEYS=1000000 scripts/bench-membership.sh
#
# The driver is a benchmark (crates/strata/benches/membership.rs)
# (it reuses the tests' helpers, crates/strata/tests/support); `cargo
# test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench -p strata --bench membership
