#!/bin/sh
# request.sh: send a request to ingot's HTTP API with a MUNGE credential,
# made with munge and sent with curl, as package proto/munge documents
# (go doc ./proto/munge). The server acts as the bank user named like the
# account that runs this script.
#
# usage: request.sh METHOD PATH [QUERY [BODYFILE]]
#
#   PATH      the path, escaped as it is to be sent, e.g. /v1/balance
#   QUERY     the query without '?', already canonical (parameters sorted by
#             name then value, percent-encoded with %20 for a space), since
#             it is bound as written; e.g. node=chem.lab1
#   BODYFILE  the exact request body (none: an empty body)
#
# Environment: INGOT_SERVER, the server's base URL (default
# http://localhost:8080); MUNGE_SOCKET, munged's socket (default: munge's).
set -eu

method=$1 path=$2 query=${3-} bodyfile=${4-}

date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
body_hash=$(sha256sum <"${bodyfile:-/dev/null}" | cut -d' ' -f1)
credential=$(printf 'INGOT-MUNGE-1\n%s\n%s\n%s\n%s\n%s' "$method" "$path" "$query" "$date" "$body_hash" |
	munge ${MUNGE_SOCKET:+--socket="$MUNGE_SOCKET"})

if [ -n "$bodyfile" ]; then
	set -- --data-binary "@$bodyfile" -H 'Content-Type: application/json'
else
	set --
fi
# --path-as-is: send the path exactly as bound (curl would squash /../).
exec curl -sS --path-as-is -X "$method" -H "Authorization: MUNGE $credential" \
	-H "X-Ingot-Date: $date" "$@" \
	"${INGOT_SERVER:-http://localhost:8080}$path${query:+?$query}"
