#!/usr/bin/env bash
# Build the OCI image of the `strata` binary (strata:latest) with buildah,
# from nothing but Debian's packages: no base image is pulled. The image
# holds the binary, the shared libraries it links (from `ldd`), a static
# busybox for /bin/sh and /bin/sleep (the Kubernetes preStop pause), an
# unprivileged user (10001) and /data. Its default command serves with
# tokens: the first start creates /data/tokens and prints an operator and
# a readwrite token once (`podman logs`); data and metrics need one.
#
#   deploy/image/build.sh [TAG]            # needs buildah (apt-get install buildah)
#   podman run -d --name strata -p 8080:8080 -v strata-data:/data strata:latest
#   podman logs strata                     # the tokens, shown once
#   podman save --format oci-archive -o strata.tar strata:latest
#
# STRATA_BIN=path uses a binary already built instead of building one;
# FEATURES=heap-profile builds the one that serves /debug/pprof/heap
# (jemalloc; docs/operations.md, "Heap profiles"), for an image of its own:
#   FEATURES=heap-profile deploy/image/build.sh strata:heap-profile
set -euo pipefail
cd "$(dirname "$0")/../.."
tag=${1:-strata:latest}
bin=${STRATA_BIN:-}
if [[ -z $bin ]]; then
    cargo build --release -p strata ${FEATURES:+--features "$FEATURES"}
    bin=target/release/strata
fi
busybox=$(command -v busybox) || { echo "busybox not found (apt-get install busybox-static)" >&2; exit 1; }
{ ldd "$busybox" 2>&1 || true; } | grep -q "not a dynamic executable" ||
    { echo "$busybox is not static (apt-get install busybox-static)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{usr/local/bin,bin,etc,data,tmp}
install -m 0755 "$bin" "$root/usr/local/bin/strata"
# Debug info stays out of the image (profiles still symbolize: the
# symbol table is kept).
strip --strip-debug "$root/usr/local/bin/strata"
# The libraries the binary links, at the paths the loader looks in.
for lib in $(ldd "$bin" | grep -oE '/[^ ]+'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done
install -m 0755 "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
ln -s busybox "$root/bin/sleep"
echo 'strata:x:10001:10001:strata:/data:/bin/sh' >"$root/etc/passwd"
echo 'strata:x:10001:' >"$root/etc/group"
chmod 1777 "$root/tmp"

ctr=$(buildah --storage-driver "${STORAGE_DRIVER:-vfs}" from scratch)
buildah --storage-driver "${STORAGE_DRIVER:-vfs}" copy "$ctr" "$root" / >/dev/null
buildah --storage-driver "${STORAGE_DRIVER:-vfs}" run --isolation chroot "$ctr" -- /bin/busybox chown 10001:10001 /data >/dev/null 2>&1 ||
    echo "note: /data stays root-owned in the image (the pod's fsGroup or the volume sets it)" >&2
buildah --storage-driver "${STORAGE_DRIVER:-vfs}" config \
    --entrypoint '["/usr/local/bin/strata"]' \
    --cmd 'serve --listen 0.0.0.0:8080 --data-dir /data --auth-tokens /data/tokens --create-tokens' \
    --user 10001:10001 \
    --port 8080 \
    --volume /data \
    --workingdir /data \
    --label org.opencontainers.image.title=strata \
    "$ctr"
buildah --storage-driver "${STORAGE_DRIVER:-vfs}" commit --rm "$ctr" "$tag" >/dev/null
buildah --storage-driver "${STORAGE_DRIVER:-vfs}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep -F "${tag%%:*}" || true
