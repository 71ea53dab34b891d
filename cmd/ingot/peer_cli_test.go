package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/proto/clients"
	"github.com/ingot-hpc/ingot/proto/peer"
)

// TestPeerAgreement: a central bank (served) and a site (on its file) make
// an agreement, each writing the key the other signs with and taking the
// other's; the key a bank made for its peer can do nothing else there;
// removing the peer ends its key at once.
func TestPeerAgreement(t *testing.T) {
	central := newRemoteSite(t)
	site := newCLIBank(t)
	site.ok("account", "create", "chem")
	site.ok("project", "create", "chem.visit")
	keys := t.TempDir()
	siteForCentral := filepath.Join(keys, "site-for-central.key")
	centralForSite := filepath.Join(keys, "central-for-site.key")

	site.ok("peer", "add", "central", "--url", "http://127.0.0.1:8080", "--key-out", siteForCentral, "--project", "chem.visit")
	central.ok("peer", "add", "siteb", "--url", "http://localhost:8081", "--key-out", centralForSite, "--peer-key", siteForCentral)
	site.ok("peer", "key", "central", centralForSite)

	var list []peer.Peer
	site.json(&list, "peer", "list")
	if len(list) != 1 || list[0].Name != "central" || list[0].Key == nil || len(list[0].Projects) != 1 || list[0].Projects[0] != "chem.visit" {
		t.Fatalf("site's peers: %+v", list)
	}
	list = nil
	central.json(&list, "peer", "show", "siteb")
	if len(list) != 1 || list[0].Key == nil || list[0].URL != "http://localhost:8081" || len(list[0].Projects) != 0 {
		t.Fatalf("central's peer: %+v", list)
	}

	// The site's key at the central bank is a peer's: every other command
	// is refused, and writes nothing.
	asSite := &cliBank{t: t, global: []string{"--server", central.url, "--key-file", centralForSite}}
	central.refused(t, asSite, exitRefused, "role peer", "balance")
	central.refused(t, asSite, exitRefused, "role peer", "peer", "list")
	central.refused(t, asSite, exitRefused, "role peer", "account", "create", "evil")

	central.refused(t, central.cliBank, exitUsage, "plain http only to a loopback", "peer", "add", "x", "--url", "http://bank.example.org", "--key-out", filepath.Join(keys, "x.key"))
	central.refused(t, central.cliBank, exitRefused, "already exists", "peer", "add", "siteb", "--url", "https://bank.example.org", "--key-out", filepath.Join(keys, "y.key"))
	central.refused(t, central.cliBank, exitNotFound, "no peer", "peer", "show", "nope")

	central.ok("peer", "remove", "siteb", "--yes")
	list = nil
	central.json(&list, "peer", "list")
	if len(list) != 0 {
		t.Fatalf("after remove: %+v", list)
	}
	central.refused(t, asSite, exitAuth, "", "balance")
}

// TestHomedProject: project create --home homes a project at a known peer
// at a rate ratio, which project show says; a home needs a known peer and
// a ratio above 0 (account create has no --home); a lien or charge on it on
// the bank's file is refused, saying that the server forwards it.
func TestHomedProject(t *testing.T) {
	b := newCLIBank(t)
	b.ok("account", "create", "visit")
	b.refused(t, exitNotFound, "no peer named \"central\"", "project", "create", "visit.chem", "--home", "central:chem.lab", "--rate-ratio", "2")
	b.ok("peer", "add", "central", "--url", "http://127.0.0.1:8090", "--key-out", filepath.Join(t.TempDir(), "k.key"))
	b.refused(t, exitUsage, "--home needs --rate-ratio", "project", "create", "visit.chem", "--home", "central:chem.lab")
	b.refused(t, exitUsage, "want PEER:PROJECT", "project", "create", "visit.chem", "--home", "central", "--rate-ratio", "2")
	b.refused(t, exitUsage, "rate ratio above 0", "project", "create", "visit.chem", "--home", "central:chem.lab", "--rate-ratio", "0")
	b.refused(t, exitUsage, "--credit-line needs --home", "project", "create", "visit.chem", "--credit-line", "5")
	b.ok("project", "create", "visit.chem", "--home", "central:chem.lab", "--rate-ratio", "1.5", "--credit-line", "500")
	if out := b.ok("project", "show", "visit.chem"); !strings.Contains(out, "central:chem.lab (rate ratio 1.5, credit line 500)") {
		t.Fatalf("project show:\n%s", out)
	}
	b.ok("machine", "add", "hpc1", "--cores", "4")
	b.ok("user", "add", "amy", "--member", "visit.chem")
	b.refused(t, exitUsage, "homed at central:chem.lab", "lien", "place", "j1", "--machine", "hpc1", "--user", "amy", "--project", "visit.chem", "--procs", "1", "--wallclock", "60")
	// On the file nothing is forwarded: the refusal says how to do it.
	const how = "on the bank's file nothing is forwarded: run the command through the bank's server"
	b.refused(t, exitUsage, how, "lien", "place", "j1", "--machine", "hpc1", "--user", "amy", "--project", "visit.chem", "--procs", "1", "--wallclock", "60")
	b.refused(t, exitUsage, how, "charge", "j1", "--machine", "hpc1", "--user", "amy", "--project", "visit.chem", "--procs", "1", "--wallclock-used", "60")
	// A job never forwarded is this bank's: it has no lien, no charges.
	b.refused(t, exitNotFound, "no active lien", "lien", "release", "j2", "--machine", "hpc1")
	b.refused(t, exitNotFound, "job j2 on hpc1 has no charges", "refund", "--job", "j2", "--machine", "hpc1")
}

// TestPeerModify: a peer's away policy is set when it is added and
// changed with its URL, CA file and agreement by peer modify, on the
// bank's file and through the server alike, its keys kept; peer show says
// the policy; a policy that cannot be is refused and changes nothing; a
// removed peer's name is not used again, and the refusal says why.
func TestPeerModify(t *testing.T) {
	for name, b := range map[string]*cliBank{"file": newCLIBank(t), "server": newRemoteSite(t).cliBank} {
		t.Run(name, func(t *testing.T) {
			keys := t.TempDir()
			b.ok("account", "create", "chem")
			b.ok("project", "create", "chem.lab")
			b.ok("project", "create", "chem.visit")
			b.refused(t, exitUsage, "credit line above 0", "peer", "add", "central", "--url", "http://127.0.0.1:8090", "--key-out", filepath.Join(keys, "x.key"), "--when-away", "accept")
			b.refused(t, exitUsage, "want refuse or accept", "peer", "add", "central", "--url", "http://127.0.0.1:8090", "--key-out", filepath.Join(keys, "x.key"), "--when-away", "maybe")
			b.ok("peer", "add", "central", "--url", "http://127.0.0.1:8090", "--key-out", filepath.Join(keys, "c.key"), "--project", "chem.lab",
				"--when-away", "accept", "--credit-line", "500")
			var list []peer.Peer
			b.json(&list, "peer", "show", "central")
			if len(list) != 1 || list[0].WhenAway != peer.AwayAccept || list[0].CreditLine.String() != "500" {
				t.Fatalf("peer show: %+v", list)
			}
			if out := b.ok("peer", "show", "central"); !strings.Contains(out, "accept up to 500") {
				t.Fatalf("peer show:\n%s", out)
			}
			// The key this bank signs with at central (any key file will
			// do here), and the one central signs with here (its client's).
			b.ok("client", "add", "x", "--role", "admin", "--key-out", filepath.Join(keys, "x.key"))
			b.ok("peer", "key", "central", filepath.Join(keys, "x.key"))
			before := b.ok("peer", "show", "central", "--json")
			list = nil
			b.json(&list, "peer", "show", "central")
			signsWith := list[0].Key
			centralKeys := func() string {
				var cs []clients.Client
				b.json(&cs, "client", "list")
				for _, c := range cs {
					if c.Name == "central" {
						return fmt.Sprint(c.Keys)
					}
				}
				return ""
			}
			answersTo := centralKeys()
			if signsWith == nil || answersTo == "" {
				t.Fatalf("central's keys: signs with %+v, answers to %q", signsWith, answersTo)
			}

			b.refused(t, exitUsage, "goes with accept", "peer", "modify", "central", "--when-away", "refuse", "--credit-line", "5")
			b.refused(t, exitUsage, "nothing to change", "peer", "modify", "central")
			b.refused(t, exitUsage, "plain http only to a loopback", "peer", "modify", "central", "--url", "http://bank.example.org")
			b.refused(t, exitRefused, "names chem.lab already", "peer", "modify", "central", "--add-project", "chem.lab")
			b.refused(t, exitNotFound, "does not name chem.visit", "peer", "modify", "central", "--remove-project", "chem.visit")
			b.refused(t, exitUsage, "chem.visit both added and removed", "peer", "modify", "central", "--add-project", "chem.visit", "--remove-project", "chem.visit")
			if after := b.ok("peer", "show", "central", "--json"); after != before {
				t.Fatalf("the refused modifies changed central:\n%s\nnow\n%s", before, after)
			}
			b.ok("peer", "modify", "central", "--url", "https://bank.central.example:8443", "--peer-ca-file", "/etc/ingot/central-ca.pem",
				"--add-project", "chem.visit", "--remove-project", "chem.lab", "--credit-line", "80")
			list = nil
			b.json(&list, "peer", "show", "central")
			p := list[0]
			if p.URL != "https://bank.central.example:8443" || p.CAFile != "/etc/ingot/central-ca.pem" || strings.Join(p.Projects, ",") != "chem.visit" ||
				p.WhenAway != peer.AwayAccept || p.CreditLine.String() != "80" || p.Key == nil || p.Key.ID != signsWith.ID {
				t.Fatalf("after modify: %+v", p)
			}
			if got := centralKeys(); got != answersTo {
				t.Fatalf("central's client keys after modify: %s, want %s", got, answersTo)
			}
			b.ok("peer", "modify", "central", "--when-away", "refuse")
			list = nil
			b.json(&list, "peer", "show", "central")
			if list[0].WhenAway != peer.AwayRefuse || !list[0].CreditLine.IsZero() {
				t.Fatalf("after --when-away refuse: %+v", list[0])
			}

			b.ok("peer", "remove", "central", "--yes")
			b.refused(t, exitRefused, "a peer's name is not used again", "peer", "add", "central", "--url", "http://127.0.0.1:8090", "--key-out", filepath.Join(keys, "c2.key"))
			b.refused(t, exitNotFound, "no peer named", "peer", "modify", "central", "--url", "http://127.0.0.1:8091")
		})
	}
}
