#!/usr/bin/env bash
# Anti-entropy figures (docs/benchmarks.md, "Anti-entropy"): three real
# nodes holding AE_KEYS keys of 100 B (default 1,000,000); an exchange when
# nothing differs; a wiped node rebuilt while `strata load` offers AE_RATE
# req/s (default 2000) of a mixed load for AE_LOAD_S seconds (default 120);
# 1,000 keys changed on one replica behind the cluster's back.
#
#   scripts/bench-antientropy.sh
#   AE_KEYS=100000 scripts/bench-antientropy.sh
#
# The driver is a benchmark (crates/strata/benches/antientropy.rs)
# so that it reuses the suite's cluster helpers; it is never run by
# `cargo test` without --ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench -p strata --bench antientropy
