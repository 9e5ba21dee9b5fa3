#!/bin/sh
# A private certificate authority and one node certificate for Strata's TLS
# (`strata serve --tls-cert node.pem --tls-key node.key --tls-ca ca.pem`),
# made with openssl. Every name a node is reached by goes in the
# certificate: IP addresses and DNS names, wildcards allowed
# (for deploy/kubernetes/tls/: '*.strata.NAMESPACE.svc'; a wildcard over
# one label, '*.strata', verifies for no name).
#
#   deploy/tls/make-certs.sh DIR NAME...
#   deploy/tls/make-certs.sh certs 127.0.0.1 localhost
#
# Writes DIR/ca.pem, DIR/ca.key (keep it offline), DIR/node.pem and
# DIR/node.key. An existing CA in DIR is reused, so a new node certificate
# (more names) is signed by the CA the cluster already trusts.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DIR NAME..." >&2; exit 2; }
dir=$1
shift
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
sans=""
for n in "$@"; do
    case $n in
        *[!0-9.]*) kind=DNS ;;
        *) kind=IP ;;
    esac
    case $n in *:*) kind=IP ;; esac
    sans="${sans:+$sans,}$kind:$n"
done
ext=$(mktemp)
trap 'rm -f "$ext" "$dir/node.csr"' EXIT
printf 'subjectAltName=%s\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n' "$sans" >"$ext"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/node.key" -out "$dir/node.csr" -subj "/CN=strata node" 2>/dev/null
openssl x509 -req -in "$dir/node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -out "$dir/node.pem" -days 825 -extfile "$ext" 2>/dev/null
chmod 644 "$dir/ca.pem" "$dir/node.pem"
echo "$dir/ca.pem $dir/node.pem $dir/node.key ($sans)"
