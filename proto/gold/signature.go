package gold

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
)

// The signature of SSSRMAP3 with a symmetric key: the digest is SHA-1 of
// the Body element's bytes, and the signature HMAC-SHA1 under the key of
// the digest's 20 raw bytes (not of the body, nor of the digest's base64).
// Both go on the wire in standard base64. A Gold key is text (Gold's
// auth_key file, Maui's CSKEY): its bytes are the HMAC key.

// Sign returns a body's DigestValue and SignatureValue under key.
func Sign(key, body []byte) (digest, signature string) {
	d := sha1.Sum(body)
	return base64.StdEncoding.EncodeToString(d[:]), base64.StdEncoding.EncodeToString(mac(key, d[:]))
}

func mac(key, digest []byte) []byte {
	h := hmac.New(sha1.New, key)
	h.Write(digest)
	return h.Sum(nil)
}

// CheckDigest refuses a message that is unsigned (422) or whose digest is
// not that of its Body as received (424): the Body changed on its way, or
// was signed as another encoding of it.
func (m *Message) CheckDigest() error {
	if !m.Signed {
		return Errorf(CodeSigning, "the message is not signed: the bank takes only messages signed with a client's key")
	}
	d := sha1.Sum(m.Body)
	if !hmac.Equal(d[:], m.Digest) {
		return Errorf(CodeAuthentication, "the DigestValue is not the SHA-1 of the Body as received: the Body was changed after it was signed")
	}
	return nil
}

// SignedWith reports whether the message's signature is key's (in
// constant time). It does not look at the digest: CheckDigest does.
func (m *Message) SignedWith(key []byte) bool {
	return m.Signed && hmac.Equal(mac(key, m.Digest), m.Signature)
}
