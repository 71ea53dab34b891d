package gold

import (
	"errors"
	"strings"
	"testing"
)

// TestSpecTestVector: the specification's key and Body give its
// DigestValue and SignatureValue, and its example message verifies, in
// Gold's layout and in Maui's.
func TestSpecTestVector(t *testing.T) {
	digest, signature := Sign([]byte(specKey), []byte(specBody))
	if digest != "fioVsm8/u5sml+JVBG8YVQDUZy4=" || signature != "oFeHwMturQL1uE1aef82nJLYeDc=" {
		t.Fatalf("Sign = %s, %s; want the specification's fioVsm8/u5sml+JVBG8YVQDUZy4=, oFeHwMturQL1uE1aef82nJLYeDc=", digest, signature)
	}
	for name, payload := range map[string]string{"gold": specXML, "maui": mauiXML} {
		t.Run(name, func(t *testing.T) {
			m, err := ParseMessage([]byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			if name == "gold" && string(m.Body) != specBody {
				t.Errorf("Body = %q; want the bytes from <Body to </Body>", m.Body)
			}
			if err := m.CheckDigest(); err != nil {
				t.Errorf("CheckDigest: %v", err)
			}
			if !m.SignedWith([]byte(specKey)) {
				t.Error("not signed with the specification's key")
			}
			if m.SignedWith([]byte(specKey + "x")) {
				t.Error("signed with another key too")
			}
		})
	}
}

// TestChangedBodyFails: any change to the Body's bytes, even one that
// means the same XML (white space, quotes, an escape), fails the digest
// with 424, and a message without a signature fails with 422.
func TestChangedBodyFails(t *testing.T) {
	changes := map[string]func(string) string{
		"a digit":        func(s string) string { return strings.Replace(s, "4242", "4243", 1) },
		"an added space": func(s string) string { return strings.Replace(s, "<Object>", " <Object>", 1) },
		"single quotes":  func(s string) string { return strings.Replace(s, `action="Reserve"`, `action='Reserve'`, 1) },
		"an escape":      func(s string) string { return strings.Replace(s, "ana", "&#97;na", 1) },
		"a self-closed tag": func(s string) string {
			return strings.Replace(s, `<Option name="WallDuration">3600</Option>`, `<Option name="WallDuration">3600</Option><Get name="x"/>`, 1)
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			changed := change(specXML)
			if changed == specXML {
				t.Fatal("the change changed nothing")
			}
			m, err := ParseMessage([]byte(changed))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.CheckDigest(); !hasCode(err, CodeAuthentication) {
				t.Errorf("CheckDigest = %v; want code 424", err)
			}
		})
	}
	// Every byte of the Body, flipped.
	start := strings.Index(specXML, "<Body>")
	for i := start; i < start+len(specBody); i++ {
		b := []byte(specXML)
		b[i] ^= 0x01
		m, err := ParseMessage(b)
		if err != nil {
			continue // no longer XML, or no longer an envelope: refused before
		}
		if m.CheckDigest() == nil && string(m.Body) != specBody {
			t.Errorf("byte %d flipped (%q) passes the digest", i, b[i])
		}
	}
	m, err := ParseMessage([]byte("<Envelope>" + specBody + "</Envelope>"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckDigest(); !hasCode(err, CodeSigning) {
		t.Errorf("unsigned: CheckDigest = %v; want 422", err)
	}
}

func hasCode(err error, code Code) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && e.Code == code
}
