#!/bin/sh
# The diagnosis recorder (crates/strata/tests/diagnosis.rs): every scenario
# swept beside its control (the same processes, nothing injected), each
# sweep's evidence and label added to the corpus, corpus/sweeps/. Then
# `strata report corpus corpus/sweeps` judges them all (so does
# crates/lab/tests/corpus.rs in CI). Needs root, strace, taskset,
# python3, ip and nft (scripts/install-test-tools.sh installs them).
#   STRATA_RECORD_ONLY=a,b   only the scenarios whose short name contains a or b
#   STRATA_RECORD_ROUNDS=N   rounds of every scenario (1), one after another
#   STRATA_RECORD_ROUND=K    the first round's number (0): on even rounds the
#                            control is swept first, on odd ones after
#   STRATA_CORPUS=DIR        record into DIR instead of corpus/sweeps
set -e
cd "$(dirname "$0")/.."
rounds=${STRATA_RECORD_ROUNDS:-1}
round=${STRATA_RECORD_ROUND:-0}
# The build that records, as it is now: built once, then run for every
# round (edits made while it records are not in it).
STRATA_RECORD_BUILD=${STRATA_RECORD_BUILD:-$(git describe --always --dirty)}
export STRATA_RECORD_BUILD
bin=$(cargo test --release -p strata --test diagnosis --no-run 2>&1 |
    sed -n 's/.*Executable tests\/diagnosis.rs (\(.*\))/\1/p')
[ -x "$bin" ] || { echo "record-corpus.sh: the recorder did not build" >&2; exit 1; }
i=0
while [ "$i" -lt "$rounds" ]; do
    STRATA_RECORD_ROUND=$((round + i)) "$bin" --ignored --nocapture --test-threads 1 record
    i=$((i + 1))
done
