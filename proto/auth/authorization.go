package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// formatAuthorization returns the Authorization header value.
func formatAuthorization(keyID string, signature []byte) string {
	return Scheme + " Credential=" + keyID + ", Signature=" + hex.EncodeToString(signature)
}

// parseAuthorization parses an Authorization header value. It follows RFC
// 9110's auth-param syntax where that costs nothing and is strict elsewhere:
// the scheme is case-insensitive and followed by one or more spaces; the
// parameters Credential and Signature come in either order, names
// case-insensitive, separated by a comma with optional spaces or tabs around
// it; each appears exactly once with a non-empty, unquoted value and no
// space around '='; no other parameter, no empty list element. The
// signature is 64 hex digits, either case.
func parseAuthorization(header string) (keyID string, sig []byte, err error) {
	malformed := func(detail string) error {
		return fmt.Errorf("%w: %s; want %s Credential=<key id>, Signature=<64 hex digits>", ErrMissing, detail, Scheme)
	}
	scheme, params, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, Scheme) {
		return "", nil, malformed(fmt.Sprintf("scheme %.32q", scheme))
	}
	if strings.Trim(params, " \t") == "" {
		return "", nil, malformed("no parameters")
	}
	var credential, signatureHex string
	var haveCredential, haveSignature bool
	for param := range strings.SplitSeq(params, ",") {
		param = strings.Trim(param, " \t")
		name, value, ok := strings.Cut(param, "=")
		var have *bool
		switch {
		case param == "":
			return "", nil, malformed("empty parameter (a stray comma?)")
		case !ok:
			return "", nil, malformed(fmt.Sprintf("parameter %.32q has no '='", param))
		case strings.EqualFold(name, "Credential"):
			have, credential = &haveCredential, value
		case strings.EqualFold(name, "Signature"):
			have, signatureHex = &haveSignature, value
		default:
			return "", nil, malformed(fmt.Sprintf("unknown parameter %.32q", name))
		}
		if *have {
			return "", nil, malformed(name + " given twice")
		}
		*have = true
	}
	switch {
	case !haveCredential:
		return "", nil, malformed("no Credential")
	case !haveSignature:
		return "", nil, malformed("no Signature")
	}
	if err := ValidateKeyID(credential); err != nil {
		return "", nil, malformed("Credential: " + err.Error())
	}
	if len(signatureHex) != 2*sha256.Size {
		return "", nil, malformed(fmt.Sprintf("Signature has %d characters", len(signatureHex)))
	}
	sig, err = hex.DecodeString(signatureHex)
	if err != nil {
		return "", nil, malformed("Signature is not hex")
	}
	return credential, sig, nil
}
