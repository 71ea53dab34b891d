// Package auth signs and checks requests to ingot's HTTP API: HMAC-SHA256
// with per-client keys, simple enough that any language, or a shell with
// openssl and curl, can sign a request in a few lines. (Users on cluster
// nodes may send a MUNGE credential instead, bound to the same canonical
// request: package munge.)
//
// # The scheme
//
// A key is an id, sent with every request, and a 256-bit secret, never sent.
// A client signs a request by computing
//
//	string-to-sign = METHOD "\n" PATH "\n" QUERY "\n" DATE "\n" NONCE "\n" REQUEST_ID "\n" hex(SHA-256(body))
//	signature      = hex(HMAC-SHA256(secret, string-to-sign))
//
// and sending three headers, and a fourth on a change:
//
//	Authorization: INGOT-HMAC-SHA256 Credential=<key id>, Signature=<signature>
//	X-Ingot-Date: <the signing time, UTC, e.g. 2026-11-22T05:00:00Z>
//	X-Ingot-Nonce: <16 or more random bytes in hex>
//	X-Ingot-Request-Id: <the change's request id>
//
// The fields of the string to sign:
//
//   - METHOD: the request method, e.g. POST.
//   - PATH: the path exactly as it appears in the request line, percent
//     escapes and all (Go's r.URL.EscapedPath()); "/" for an empty path.
//     A proxy that rewrites paths breaks signatures.
//   - QUERY: the canonical query, below; empty when there is none.
//   - DATE: the X-Ingot-Date header: RFC 3339 in UTC with whole seconds and
//     "Z", exactly as `date -u +%Y-%m-%dT%H:%M:%SZ` prints it; no other form
//     is accepted.
//   - NONCE: the X-Ingot-Nonce header: an even number of hex digits, 32 to
//     128 (16 to 64 random bytes), either case.
//   - REQUEST_ID: the X-Ingot-Request-Id header, empty when there is none
//     (reads). It is signed so that nobody on the path can change it: the
//     bank applies a change once per request id, and answers a retry under
//     the same id with the first answer. A request signed the way before
//     (without this line) is refused with ErrOldStringToSign.
//   - the body's SHA-256 in lowercase hex; an empty body hashes to
//     e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.
//
// The canonical query (see CanonicalQuery): split the raw query at '&',
// skip empty parts, split each at its first '=' (no '=' means an empty
// value), decode percent escapes and '+' (a space, as in HTML forms, so a
// literal plus is %2B); then percent-encode each name and value, leaving
// A-Z a-z 0-9 - . _ ~ as they are and writing every other byte as %XX in
// uppercase hex (a space is %20, never +); sort the pairs by encoded name,
// then by encoded value, comparing bytes; join them as name=value with '&'.
// A repeated name keeps all its values, duplicates included. A ';' in the
// query is refused, as are more than 10,000 parameters. Examples:
//
//	raw query                   canonical query
//	b=2&a=1                     a=1&b=2
//	a=2&a=1&a=1                 a=1&a=1&a=2
//	flag&x=                     flag=&x=
//	q=a+b&r=a%20b&s=a%2Bb       q=a%20b&r=a%20b&s=a%2Bb
//	path=%2fv1%2F&star=*        path=%2Fv1%2F&star=%2A
//	name=J%C3%B6rg              name=J%C3%B6rg
//
// A client that writes its query in canonical form (as the shell recipe
// below must) signs it as written.
//
// The Authorization header: the scheme, in any case, then one or more
// spaces; Credential and Signature in either order, names in any case,
// separated by a comma with optional spaces or tabs around it; each exactly
// once, unquoted, no spaces around '='; nothing else. A key id is 1 to 64
// characters from A-Z a-z 0-9 . _ -, starting with a letter or digit.
//
// # Checking
//
// A Verifier looks the key up (an unknown or revoked key is refused),
// requires the date within ±5 minutes of the server's clock, compares
// signatures in constant time, and accepts each nonce once: a nonce is
// remembered, after the signature has been checked (so nobody without the
// key can use up nonces), until its request's date leaves the window. The
// nonces remembered of each key are capped (Verifier.MaxNonces); beyond
// its cap the server refuses that key's requests until its old nonces
// expire, rather than grow, and other keys are not affected.
//
// What a replay can do: a captured request sent again within the window
// is refused (its nonce is remembered); after a restart, which forgets the
// nonces, it is accepted again if its date is still within the window,
// but a change is then a retry of its signed request id: the bank answers
// with the first answer and applies nothing twice, and a read only reads.
// Nobody on the path can change the request id (it is signed), so a
// replay can neither apply a change a second time nor get another change's
// answer. Every
// refusal wraps a sentinel error of errors.go saying what was wrong; a
// refused signature's error shows the string the server signed, so a
// client's author can see which field differs.
//
// # Key files
//
// A key file holds one line "<key id>:<secret>", the secret being its 32
// bytes in base64url without padding (43 characters; one trailing "=" is
// tolerated on reading), then a newline. ingot shows a secret once and
// stores it encrypted; keep the key file readable by its owner only.
//
// # A worked example with openssl and curl
//
// The key sched-1 with the secret 00 01 02 ... 1f (never use this one) signs
// POST /v1/quote?machine=hpc1&project=chem with the body
// {"cpus":4,"seconds":3600} at 2026-11-22T05:00:00Z with the nonce
// 9f86d081884c7d659a2feaa0c55ad015. In a POSIX shell:
//
//	printf 'sched-1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n' >key
//	printf '{"cpus":4,"seconds":3600}' >body.json
//	IFS=: read -r key_id secret <key
//	key_hex=$(printf '%s=' "$secret" | tr '_-' '/+' | openssl base64 -d -A | od -An -v -tx1 | tr -d ' \n')
//	date=2026-11-22T05:00:00Z            # for real: date -u +%Y-%m-%dT%H:%M:%SZ
//	nonce=9f86d081884c7d659a2feaa0c55ad015 # for real: openssl rand -hex 16
//	body_hash=$(openssl dgst -sha256 <body.json | sed 's/^.*= //')
//	request_id=                          # a change's id; a quote is a read, it has none
//	printf '%s\n%s\n%s\n%s\n%s\n%s\n%s' POST /v1/quote 'machine=hpc1&project=chem' \
//		"$date" "$nonce" "$request_id" "$body_hash" >string-to-sign
//	signature=$(openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key_hex" <string-to-sign | sed 's/^.*= //')
//	curl -sS --path-as-is -X POST --data-binary @body.json -H 'Content-Type: application/json' \
//		-H "Authorization: INGOT-HMAC-SHA256 Credential=$key_id, Signature=$signature" \
//		-H "X-Ingot-Date: $date" -H "X-Ingot-Nonce: $nonce" \
//		'http://localhost:8080/v1/quote?machine=hpc1&project=chem'
//
// The body hash is
// 869caaa4307f72a4330cfce93a7122415dbd9e3cd8cb77223f9a7ca8240bebe2 and the
// signature 00a6c230d216a45f55bbbcaf0f1fc2e83c03ba4af6859e8e173906ba0242c018.
// A change also sends -H "X-Ingot-Request-Id: $request_id".
// (--path-as-is stops curl from rewriting the path after it was signed.)
// The same recipe, as a script taking a key file, is testdata/sign.sh in
// this package's source; the tests check it against this package. Either
// way the secret passes on openssl's command line, where other users of the
// machine can see it: a demonstration, not a client for shared machines.
//
// # Caveats
//
// The body is signed whole, so the server reads it (up to its size limit)
// before checking. The nonce cache lives in one process's memory: servers
// behind a load balancer each accept a nonce once, and a restart forgets the
// nonces (a request replayed within five minutes of the restart passes).
// Clocks matter: a client more than five minutes off is refused.
package auth
