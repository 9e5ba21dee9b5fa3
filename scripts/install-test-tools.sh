#!/usr/bin/env bash
# What the tests use beyond the Rust toolchain, installed where it is
# missing (scripts/test and .ci/run call this; README "The two commands").
# As root on a machine with apt-get (Debian, Ubuntu) it installs the
# missing tools' packages, and kubernetes-validate with pip; otherwise it
# says which it could not install and how. A test whose tool is missing
# fails saying so.
#   --check   only say what is missing (exit 1 when something is)
set -uo pipefail

check_only=0
case "${1:-}" in
--check) check_only=1 ;;
"") ;;
*)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac

is_root=0
[[ $(id -u) == 0 ]] && is_root=1

has() { command -v "$1" >/dev/null 2>&1; }
static_busybox() { { ldd /bin/busybox 2>&1 || true; } | grep -q "not a dynamic executable"; }

# The Debian packages of the tools that are missing, each with the tests
# that use it (pkgs, whys).
missing() {
    pkgs=()
    whys=()
    need() { # need PACKAGE WHY CHECK...
        local pkg=$1 why=$2
        shift 2
        "$@" || {
            pkgs+=("$pkg")
            whys+=("$pkg: $why")
        }
    }
    need binutils "readelf: the probe tests read the binary's SDT notes" has readelf
    need bpftrace "the probe tests attach bpftrace to a live node" has bpftrace
    need chromium "the report test opens report.html in headless Chromium" \
        eval 'has chromium || has chromium-browser || has google-chrome'
    need fiu-utils "fiu-run, fiu-ctrl: the I/O fault tests" has fiu-run
    need prometheus "promtool: the alert rules checked and tested" has promtool
    need buildah "the image test builds the OCI image" has buildah
    need busybox-static "the image's shell (a static busybox)" static_busybox
    need strace "the diagnosis suite's slow fsync" has strace
    need util-linux "taskset: the diagnosis and calibration tests pin processes" has taskset
    need python3 "the diagnosis suite's neighbours (small python3 loops)" has python3
    need iproute2 "ip: network namespaces (partition tests) and addresses" has ip
    need nftables "nft: the partition tests drop packets" has nft
    need systemd "systemd-analyze: the unit file checked" has systemd-analyze
    need openssl "the TLS tests make certificates" has openssl
    need curl "the TLS and Kubernetes tests talk to nodes with curl" has curl
    # pip, for kubernetes-validate below, when that is missing too.
    if ! has kubernetes-validate && ! has pip3; then
        pkgs+=(python3-pip)
        whys+=("python3-pip: pip, to install kubernetes-validate")
    fi
}

say_missing() {
    local w
    for w in "${whys[@]}"; do echo "  $w" >&2; done
}

# The checks' Rust components (.ci/run runs cargo fmt and cargo clippy).
if ((!check_only)) && has rustup; then
    rustup component add rustfmt clippy >/dev/null 2>&1 ||
        echo "warning: could not add the rustfmt and clippy components (rustup component add rustfmt clippy)" >&2
fi

missing
if ((check_only)); then
    status=0
    if ((${#pkgs[@]})); then
        echo "missing Debian packages: ${pkgs[*]}" >&2
        say_missing
        status=1
    fi
    if ! has kubernetes-validate; then
        echo "missing: kubernetes-validate (pip install kubernetes-validate): the Kubernetes manifests' test" >&2
        status=1
    fi
    ((status)) || echo "every tool the tests use is here"
    exit "$status"
fi

if ((${#pkgs[@]})); then
    if ((is_root)) && has apt-get; then
        echo "installing ${pkgs[*]} (apt-get)" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}") >/dev/null 2>&1
        missing
    fi
    if ((${#pkgs[@]})); then
        if ((is_root)) && has apt-get; then
            echo "warning: could not install ${pkgs[*]} (apt-get install failed); the tests that use them will fail:" >&2
        elif has apt-get; then
            echo "warning: not root, so could not install ${pkgs[*]} (sudo apt-get install ${pkgs[*]}); the tests that use them will fail:" >&2
        else
            echo "warning: no apt-get, so could not install the tools of Debian's packages ${pkgs[*]}; install them by hand, or the tests that use them will fail:" >&2
        fi
        say_missing
    fi
fi

# The Kubernetes manifests are validated against the API schemas
# (kubernetes-validate, from PyPI): for this user when not root (pip's
# user scheme; scripts/test puts its bin directory on PATH). A Python
# that refuses packages outside a virtual environment (PEP 668, Debian's)
# is told to take it anyway: it is a test tool on a test machine.
if ! has kubernetes-validate; then
    pip=(pip3 install -q)
    ((is_root)) || pip+=(--user)
    if has pip3; then
        "${pip[@]}" kubernetes-validate >/dev/null 2>&1 ||
            "${pip[@]}" --break-system-packages kubernetes-validate >/dev/null 2>&1
    fi
    user_bin="$(python3 -m site --user-base 2>/dev/null)/bin"
    has kubernetes-validate || [[ -x $user_bin/kubernetes-validate ]] ||
        echo "warning: could not install kubernetes-validate (pip install kubernetes-validate); the Kubernetes manifests' test will fail" >&2
fi
exit 0
