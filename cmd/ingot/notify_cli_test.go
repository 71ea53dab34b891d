package main

import (
	"strings"
	"testing"
)

// TestUserContact: user modify --email, --webhook and --notify set where
// a user's digests go, alone or with a change of the user; user contacts
// lists them; bad input is refused and changes nothing.
func TestUserContact(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("user", "add", "amy", "--member", "chem")
	if out := b.ok("user", "modify", "amy", "--email", "amy@example.org", "-P"); !strings.Contains(out, "\namy|on|amy@example.org|") {
		t.Errorf("user modify --email:\n%s", out)
	}
	if out := b.ok("user", "modify", "amy", "--notify", "off", "--description", "Amy", "-P"); !strings.Contains(out, "|Amy") {
		t.Errorf("user modify --notify off --description shows the user:\n%s", out)
	}
	b.refused(t, exitUsage, "on or off", "user", "modify", "amy", "--notify", "maybe")
	b.refused(t, exitUsage, "bare address", "user", "modify", "amy", "--email", "not an address")
	b.refused(t, exitUsage, "http:// or https://", "user", "modify", "amy", "--webhook", "mailto:amy@example.org")
	if out := b.ok("user", "contacts", "-P"); !strings.Contains(out, "\namy|off|amy@example.org|\n") {
		t.Errorf("user contacts:\n%s", out)
	}
	b.ok("audit")
}
