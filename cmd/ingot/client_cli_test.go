package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
)

func TestClientKeys(t *testing.T) {
	b := newCLIBank(t)
	b.ok("machine", "add", "hpc1")
	out, code := b.run("client", "add", "slurm", "--role", "scheduler", "--scope", "hpc1")
	if code != exitOK || !strings.Contains(out, "created server key") {
		t.Fatalf("client add exited %d:\n%s", code, out)
	}
	line := out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:]
	key, err := auth.ParseKeyFile([]byte(line))
	if err != nil {
		t.Fatalf("the printed key is not a key file: %v\n%s", err, out)
	}
	var list []clients.Client
	b.json(&list, "client", "list")
	if len(list) != 1 || list[0].Keys[0].ID != key.ID || list[0].Role != clients.RoleScheduler {
		t.Errorf("client list = %+v", list)
	}
	if out := b.ok("client", "list"); strings.Contains(out, line[len(key.ID)+1:len(line)-1]) {
		t.Error("client list shows the secret")
	}
	keyFile := filepath.Join(t.TempDir(), "slurm.key")
	b.ok("client", "rotate", "slurm", "--key-out", keyFile)
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	second, err := auth.ParseKeyFile(raw)
	if err != nil || second.ID == key.ID {
		t.Fatalf("rotated key %v %v", second.ID, err)
	}
	if st, _ := os.Stat(keyFile); st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", st.Mode().Perm())
	}
	b.ok("client", "revoke", "slurm", key.ID)
	b.json(&list, "client", "list")
	if list[0].Keys[0].Revoked.IsZero() || !list[0].Keys[1].Revoked.IsZero() {
		t.Errorf("after revoke: %+v", list[0].Keys)
	}
	b.refused(t, exitUsage, "unknown role", "client", "add", "x", "--role", "root")
	b.refused(t, exitUsage, "needs --role", "client", "add", "x")
	b.refused(t, exitNotFound, `no machine named "hpc9"`, "client", "add", "x", "--role", "scheduler", "--scope", "hpc9")
	b.refused(t, exitRefused, "already exists", "client", "add", "slurm", "--role", "admin")
	b.refused(t, exitRefused, "was revoked", "client", "revoke", "slurm", key.ID)
	bad := filepath.Join(t.TempDir(), "bad.key")
	os.WriteFile(bad, []byte("nope\n"), 0o600)
	b.refused(t, exitUnavailable, "server key", "client", "list", "--server-key", bad)
}

// TestGoldClientKey: a client made with --gold has its key printed as
// ingot's key file, Gold's auth_key file and Maui's CSKEY hold it (the
// same secret), on adding and on rotating; client list says Gold.
func TestGoldClientKey(t *testing.T) {
	b := newCLIBank(t)
	b.ok("machine", "add", "hpc1")
	for _, args := range [][]string{
		{"client", "add", "maui", "--role", "scheduler", "--scope", "hpc1", "--gold"},
		{"client", "rotate", "maui"},
	} {
		out := b.ok(args...)
		lines := strings.Split(out, "\n")
		var key auth.Key
		var authKey, maui string
		for i, l := range lines {
			switch {
			case strings.HasPrefix(l, "# ingot's key file"):
				key, _ = auth.ParseKeyFile([]byte(lines[i+1]))
			case strings.HasPrefix(l, "# Gold's auth_key file"):
				authKey = lines[i+1]
			case strings.HasPrefix(l, "CLIENTCFG[AM:bank] CSKEY="):
				maui = strings.TrimPrefix(l, "CLIENTCFG[AM:bank] CSKEY=")
			}
		}
		if key.ID == "" || authKey != key.SecretText() || maui != key.SecretText() {
			t.Errorf("ingot %s printed\n%s", strings.Join(args, " "), out)
		}
	}
	var list []clients.Client
	b.json(&list, "client", "list")
	if len(list) != 1 || !list[0].Gold {
		t.Errorf("client list = %+v", list)
	}
	b.ok("client", "add", "slurm", "--role", "scheduler", "--scope", "hpc1")
	if out := b.ok("client", "list", "-P"); !strings.Contains(out, "maui|scheduler|hpc1|yes|") || !strings.Contains(out, "slurm|scheduler|hpc1|no|") {
		t.Errorf("client list -P:\n%s", out)
	}
}
