#!/bin/sh
# A private certificate authority, node certificates and client
# certificates for Strata's TLS (docs/security.md), made with openssl.
#
#   deploy/tls/make-certs.sh DIR NAME...             a node certificate
#   deploy/tls/make-certs.sh certs 127.0.0.1 localhost
#   deploy/tls/make-certs.sh --client DIR USER ROLE  a client certificate
#   deploy/tls/make-certs.sh --client certs alice operator
#
# A node certificate carries every name a node is reached by: IP addresses
# and DNS names, wildcards allowed (for deploy/kubernetes/tls/:
# '*.strata.NAMESPACE.svc'; a wildcard over one label, '*.strata', verifies
# for no name). Its subject says OU=node: with `--tls-ca` (or
# `--client-ca`) the nodes verify client certificates, and a member's
# internal connections must show one that says node. It writes DIR/ca.pem,
# DIR/ca.key (keep it offline), DIR/node.pem and DIR/node.key.
#
# A client certificate (`--client`) names its holder (CN=USER) and role
# (OU=ROLE: read, readwrite, monitor or operator), for clients that
# authenticate with certificates (`strata --tls-client-cert
# DIR/USER.pem --tls-client-key DIR/USER.key`, `curl --cert --key`). It
# writes DIR/USER.pem and DIR/USER.key.
#
# An existing CA in DIR is reused, so new certificates are signed by the CA
# the cluster already trusts.
set -eu
usage() {
    echo "usage: $0 DIR NAME...  |  $0 --client DIR USER ROLE" >&2
    exit 2
}
client=
if [ "${1:-}" = --client ]; then
    [ $# -eq 4 ] || usage
    client=$3
    role=$4
    case $role in
        read | readwrite | monitor | operator) ;;
        *) echo "role $role: read, readwrite, monitor or operator" >&2; exit 2 ;;
    esac
    case $client in
        "" | *[!A-Za-z0-9._-]*) echo "user $client: letters, digits, . _ - only" >&2; exit 2 ;;
    esac
    dir=$2
    shift 4
else
    [ $# -ge 2 ] || usage
    dir=$1
    shift
fi
mkdir -p "$dir"
umask 077
# The CA's name is its own (a random suffix): a node signed by another
# cluster's CA is then refused as "UnknownIssuer", not "BadSignature".
if [ ! -f "$dir/ca.pem" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 3650 \
        -subj "/CN=Strata cluster CA $(openssl rand -hex 4)" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
ext=$(mktemp)
if [ -n "$client" ]; then
    name=$client
    subj="/CN=$client/OU=$role"
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >"$ext"
else
    name=node
    subj="/CN=strata node/OU=node"
    sans=""
    for n in "$@"; do
        case $n in
            *[!0-9.]*) kind=DNS ;;
            *) kind=IP ;;
        esac
        case $n in *:*) kind=IP ;; esac
        sans="${sans:+$sans,}$kind:$n"
    done
    printf 'subjectAltName=%s\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n' "$sans" >"$ext"
fi
trap 'rm -f "$ext" "$dir/$name.csr"' EXIT
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "$subj" 2>/dev/null
openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -out "$dir/$name.pem" -days 825 -extfile "$ext" 2>/dev/null
chmod 644 "$dir/ca.pem" "$dir/$name.pem"
if [ -n "$client" ]; then
    echo "$dir/ca.pem $dir/$name.pem $dir/$name.key (CN=$client, OU=$role)"
else
    echo "$dir/ca.pem $dir/$name.pem $dir/$name.key ($sans)"
fi
