#!/bin/sh
# sign.sh: sign a request to ingot's HTTP API with openssl and send it with
# curl, as package proto/auth documents (go doc ./proto/auth).
#
# usage: sign.sh KEYFILE METHOD PATH [QUERY [BODYFILE]]
#
#   KEYFILE   the key file, one line <key id>:<secret as base64url>
#   PATH      the path, escaped as it is to be sent, e.g. /v1/quote
#   QUERY     the query without '?', already canonical (parameters sorted by
#             name then value, percent-encoded with %20 for a space), since
#             it is signed as written; e.g. machine=hpc1&project=chem
#   BODYFILE  the exact request body (none: an empty body)
#
# Environment: INGOT_SERVER, the server's base URL (default
# http://localhost:8080); INGOT_DATE and INGOT_NONCE fix the date and the
# nonce (tests only: the server accepts a nonce once); INGOT_SIGN_ONLY=1
# prints the three headers instead of sending the request; INGOT_REQUEST_ID
# sends the X-Ingot-Request-Id header every change needs (a unique id; the
# same id again retries the change: the first answer, nothing applied twice),
# and signs it: it is a line of the string to sign, empty without one;
# INGOT_CA_FILE, for an https server, the certificate authority to check it
# against (curl --cacert).
#
# Exit status: curl's; 22 when the server refused the request (its JSON
# error is printed all the same).
#
# The secret passes through openssl's command line, where other users of
# the machine can see it (ps): a demonstration, not for shared machines.
set -eu

keyfile=$1 method=$2 path=$3 query=${4-} bodyfile=${5-}

# The secret in hex, for openssl: base64url -> base64 -> bytes -> hex.
IFS=: read -r key_id secret <"$keyfile"
key_hex=$(printf '%s=' "${secret%=}" | tr '_-' '/+' | openssl base64 -d -A | od -An -v -tx1 | tr -d ' \n')
if [ ${#key_hex} -ne 64 ]; then
	echo "sign.sh: $keyfile: the secret is not 32 bytes of base64url" >&2
	exit 1
fi

date=${INGOT_DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
nonce=${INGOT_NONCE:-$(openssl rand -hex 16)}
body_hash=$(openssl dgst -sha256 <"${bodyfile:-/dev/null}" | sed 's/^.*= //')
signature=$(printf '%s\n%s\n%s\n%s\n%s\n%s\n%s' "$method" "$path" "$query" "$date" "$nonce" "${INGOT_REQUEST_ID-}" "$body_hash" |
	openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key_hex" | sed 's/^.*= //')
authorization="Authorization: INGOT-HMAC-SHA256 Credential=$key_id, Signature=$signature"

if [ "${INGOT_SIGN_ONLY-}" = 1 ]; then
	printf '%s\n' "$authorization" "X-Ingot-Date: $date" "X-Ingot-Nonce: $nonce"
	exit 0
fi
if [ -n "$bodyfile" ]; then
	set -- --data-binary "@$bodyfile" -H 'Content-Type: application/json'
else
	set --
fi
if [ -n "${INGOT_REQUEST_ID-}" ]; then
	set -- "$@" -H "X-Ingot-Request-Id: $INGOT_REQUEST_ID"
fi
if [ -n "${INGOT_CA_FILE-}" ]; then
	set -- "$@" --cacert "$INGOT_CA_FILE"
fi
# --path-as-is: send the path exactly as signed (curl would squash /../).
# --fail-with-body (curl 7.76 or later): a refusal (HTTP 400 or above)
# prints the server's JSON error and exits 22, so that a script sees it
# failed.
exec curl -sS --path-as-is --fail-with-body -X "$method" -H "$authorization" \
	-H "X-Ingot-Date: $date" -H "X-Ingot-Nonce: $nonce" "$@" \
	"${INGOT_SERVER:-http://localhost:8080}$path${query:+?$query}"
