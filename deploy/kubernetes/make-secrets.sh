#!/usr/bin/env bash
# Make the cluster's secrets at install: nothing secret is committed to
# this repository (a node refuses any secret written in it).
#
#   deploy/kubernetes/make-secrets.sh [DIR]      # DIR: ./strata-secrets
#   kubectl apply -f DIR/secrets.yaml -f deploy/kubernetes/strata.yaml \
#                 -f deploy/kubernetes/pdb.yaml
#
# DIR (mode 0700, refused if it exists) then holds:
#   cluster-secret   the secret the members share (32 random bytes, hex)
#   tokens           the nodes' tokens file (roles and SHA-256 digests only)
#   app.token        a readwrite token for applications
#   monitor.token    a monitor token for Prometheus (/metrics)
#   lab.token        a readwrite token for the lab's load
#   worker.token     the token the lab's workers want from their
#                    controller (lab-workers.yaml, lab-sweep-job.yaml)
#   secrets.yaml     four Secrets: strata-cluster-secret (secret),
#                    strata-tokens (tokens), strata-lab-tokens (token,
#                    metrics-token: the lab's and the monitor token),
#                    strata-lab-worker-token (token)
# The operator token derives from the cluster secret:
#   STRATA_TOKEN=$(strata token operator --cluster-secret-file DIR/cluster-secret)
# Keep DIR as you keep any credential (or delete it once applied: the
# Secrets hold everything). Needs openssl and sha256sum.
set -euo pipefail
dir=${1:-strata-secrets}
if [[ -e $dir ]]; then
    echo "$dir exists: a cluster keeps its secret (remove it to make new ones)" >&2
    exit 1
fi
command -v openssl >/dev/null || { echo "openssl is needed" >&2; exit 1; }
umask 077
mkdir -p "$dir"

openssl rand -hex 32 >"$dir/cluster-secret"
# A token is any random string; the tokens file holds `ROLE NAME SHA256`
# (docs/security.md), what `strata token new` writes.
token() { # ROLE NAME: the token in NAME.token, its line in tokens
    local t
    t="st0_$(openssl rand -hex 24)"
    printf '%s\n' "$t" >"$dir/$2.token"
    printf '%s %s %s\n' "$1" "$2" "$(printf '%s' "$t" | sha256sum | cut -d' ' -f1)" >>"$dir/tokens"
}
token readwrite app
token monitor monitor
token readwrite lab
# Not a node's token: the workers check it themselves.
printf 'sw0_%s\n' "$(openssl rand -hex 24)" >"$dir/worker.token"

indent() { sed 's/^/    /'; }
{
    cat <<YAML
# Made by deploy/kubernetes/make-secrets.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ).
apiVersion: v1
kind: Secret
metadata:
  name: strata-cluster-secret
  labels:
    app.kubernetes.io/name: strata
type: Opaque
stringData:
  secret: "$(cat "$dir/cluster-secret")"
---
apiVersion: v1
kind: Secret
metadata:
  name: strata-tokens
  labels:
    app.kubernetes.io/name: strata
type: Opaque
stringData:
  tokens: |
$(indent <"$dir/tokens")
---
apiVersion: v1
kind: Secret
metadata:
  name: strata-lab-tokens
  labels:
    app.kubernetes.io/name: strata-lab
type: Opaque
stringData:
  token: "$(cat "$dir/lab.token")"
  metrics-token: "$(cat "$dir/monitor.token")"
---
apiVersion: v1
kind: Secret
metadata:
  name: strata-lab-worker-token
  labels:
    app.kubernetes.io/name: strata-lab-worker
type: Opaque
stringData:
  token: "$(cat "$dir/worker.token")"
YAML
} >"$dir/secrets.yaml"
echo "made $dir: apply $dir/secrets.yaml before the manifests; the application's token is in $dir/app.token" >&2
