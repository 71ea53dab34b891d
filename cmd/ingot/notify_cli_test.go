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

// TestNotifyWithoutChannel: a dry run with no channel set says why it
// cannot run, and not also that no digest is due.
func TestNotifyWithoutChannel(t *testing.T) {
	b := newCLIBank(t)
	b.refused(t, exitUsage, "--smtp-server", "notify", "--dry-run")
	if out, _ := b.run("notify", "--dry-run"); strings.Contains(out, "no digest is due") {
		t.Errorf("a dry run that could not run says no digest is due:\n%s", out)
	}
}

// TestNotifyReadsServeConfig: ingot notify --config reads the digests'
// settings from serve's file, leaving serve's other keys alone, and
// refuses a key that is no one's; --dry-run prints the digests and
// records nothing.
func TestNotifyReadsServeConfig(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("deposit", "chem", "100", "--end", "now+5d")
	file := writeConfig(t, "listen = \"127.0.0.1:1\"\nsocket = \"/nonexistent/ingot.sock\"\n"+
		"smtp-server = \"127.0.0.1:1\"\nnotify-admin = \"ops@example.org,boss@example.org\"\nnotify-ending-days = \"7\"\n")
	entries := b.entries()
	out := b.ok("notify", "--dry-run", "--config", file)
	if strings.Count(out, "allocation 1 of chem (100.00 left of 100.00) ends on") != 2 || !strings.Contains(out, "To: boss@example.org") {
		t.Errorf("notify --dry-run with serve's config:\n%s", out)
	}
	if b.entries() != entries {
		t.Errorf("a dry run journaled %d entries", b.entries()-entries)
	}
	b.refused(t, exitUsage, `unknown key "lisen"`, "notify", "--dry-run", "--config", writeConfig(t, "lisen = \"x\"\n"))
	b.refused(t, exitUsage, "--smtp-server", "notify", "--dry-run")
}

// TestDigestOfAShare: a project whose HFS share is a small part of its
// account is not low for that: low compares the account's credits with
// its allocations.
func TestDigestOfAShare(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "chem")
	b.ok("project", "create", "chem.lab1")
	b.ok("project", "create", "chem.lab2")
	b.ok("project", "policy", "chem.lab1", "--quota", "shares:1")
	b.ok("project", "policy", "chem.lab2", "--quota", "shares:19")
	b.ok("deposit", "chem", "1000")
	b.ok("machine", "add", "hpc1")
	if out := b.ok("balance", "chem.lab1", "-P"); !strings.Contains(out, "|50.00|") {
		t.Fatalf("chem.lab1's share is not 5%%:\n%s", out)
	}
	b.ok("user", "add", "amy", "--member", "chem.lab1")
	b.ok("user", "modify", "amy", "--email", "amy@example.org")
	if out := b.ok("notify", "--dry-run", "--smtp-server", "127.0.0.1:1"); !strings.Contains(out, "no digest is due") {
		t.Errorf("a project's small share is told as low:\n%s", out)
	}
	b.ok("charge", "j1", "--machine", "hpc1", "--user", "amy", "--project", "chem.lab1", "--procs", "1", "--wallclock-used", "960")
	if out := b.ok("notify", "--dry-run", "--smtp-server", "127.0.0.1:1"); !strings.Contains(out, "chem.lab1 has 40.00 left, 4%") {
		t.Errorf("the account at 4%%:\n%s", out)
	}
}
