package contrib

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRestoreProcedure follows docs/operations.md on a bank installed by
// make install: its first start, then changes, the backup that
// ingot-backup.service runs, more changes, the server stopped and the bank
// deleted, and its restore, each block of commands run as written. The
// restored bank audits clean through the server, has the balances it had
// when the copy was made (the change made after it is lost, as the
// documentation says), and still takes the admin key made at the first
// start. The backup also removes the oldest copies beyond the unit's
// number, and nothing else.
//
// The host's directories are the test's: /var/lib/ingot and /run/ingot
// are rewritten to directories of its own in the commands, the config and
// the unit's environment; the config's ports are free ones; commands run
// as the test's user (runuser -u ingot and install's -o ingot -g ingot are
// dropped); systemctl starts and stops ingot serve, as the unit runs it.
// copyName is the name of a copy made by ingot-backup.
var copyName = regexp.MustCompile(`^ingot-[0-9]{8}T[0-9]{6}Z\.db$`)

func TestRestoreProcedure(t *testing.T) {
	prefix := installPrefix(t)
	host := t.TempDir()
	state, runtime := filepath.Join(host, "var", "lib", "ingot"), filepath.Join(host, "run", "ingot")
	// tmpfiles.d makes the first, ingot-backup.service's StateDirectory=
	// the second, ingot.service's RuntimeDirectory= the third.
	for _, dir := range []string{state, filepath.Join(state, "backups"), runtime} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	paths := strings.NewReplacer("/var/lib/ingot", state, "/run/ingot", runtime)

	installedConfig, err := os.ReadFile(filepath.Join(prefix, "etc", "ingot", "ingot.toml"))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(host, "ingot.toml")
	ports := strings.NewReplacer(`"127.0.0.1:8080"`, `"127.0.0.1:0"`, `"127.0.0.1:9108"`, `"127.0.0.1:0"`)
	if err := os.WriteFile(config, []byte(ports.Replace(paths.Replace(string(installedConfig)))), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(prefix, "bin")
	srv := &service{t: t, argv: []string{filepath.Join(bin, "ingot"), "serve", "--config", config}, log: filepath.Join(host, "serve.log")}
	home := t.TempDir()
	shell := &docShell{t: t, dir: "/", env: operatorEnv(home, bin), systemctl: srv.systemctl,
		rewrite: strings.NewReplacer("/var/lib/ingot", state, "/run/ingot", runtime, "runuser -u ingot -- ", "", "-o ingot -g ingot ", "")}
	if out := shell.run(docBlock(t, "First start")); !strings.HasSuffix(out, "audit: OK\n") {
		t.Fatalf("the first start did not end with audit: OK:\n%s", out)
	}

	ingot := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "ingot"), append([]string{"--server", "unix:" + filepath.Join(runtime, "ingot.sock")}, args...)...)
		cmd.Env = operatorEnv(home)
		return run(t, cmd)
	}
	ingot("account", "create", "chem")
	ingot("account", "create", "bio")
	ingot("deposit", "chem", "1000", "--end", "now+30d")
	ingot("transfer", "chem", "bio", "250")
	atBackup := ingot("balance", "-P")

	// Copies made on earlier days, which the backup keeps but for the
	// oldest (the unit keeps 14), and files of other names, which it
	// leaves alone.
	backups := filepath.Join(state, "backups")
	var earlier []string
	for day := 1; day <= 14; day++ {
		earlier = append(earlier, fmt.Sprintf("ingot-202001%02dT020000Z.db", day))
	}
	// A fresh temporary file, such as a backup running now writes, is left
	// alone; one untouched for hours is a backup killed before it could
	// remove it (a power cut, SIGKILL), and goes.
	others := []string{"ingot-before-upgrade.db", "notes.txt", ".ingot-backup-running"}
	for _, name := range append(slices.Clone(earlier), append(others, ".ingot-backup-killed")...) {
		if err := os.WriteFile(filepath.Join(backups, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	longAgo := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(filepath.Join(backups, ".ingot-backup-killed"), longAgo, longAgo); err != nil {
		t.Fatal(err)
	}
	exe, env := unitCommand(t, filepath.Join(prefix, "lib", "systemd", "system", "ingot-backup.service"), paths)
	backup := exec.Command(exe)
	backup.Env = append(operatorEnv(home), env...)
	if out := run(t, backup); !strings.Contains(out, "audit OK") || !strings.Contains(out, "removed "+filepath.Join(backups, earlier[0])) ||
		!strings.Contains(out, "removed "+filepath.Join(backups, ".ingot-backup-killed")) {
		t.Errorf("the backup printed:\n%s\nwant a copy audited OK, %s and .ingot-backup-killed removed", out, earlier[0])
	}
	entries, err := os.ReadDir(backups)
	if err != nil {
		t.Fatal(err)
	}
	kept := append(slices.Clone(earlier[1:]), others...)
	var made []string
	for _, e := range entries {
		if !slices.Contains(kept, e.Name()) {
			made = append(made, e.Name())
		}
	}
	if len(made) != 1 || !copyName.MatchString(made[0]) {
		t.Errorf("after the backup, %s holds %v besides %v; want the new copy alone", backups, made, kept)
	}
	if len(made)+len(kept) != len(entries) {
		t.Errorf("the backup removed some of %v", kept)
	}

	ingot("deposit", "bio", "75") // after the copy: the restore loses it
	srv.systemctl([]string{"stop", "ingot.service"})
	if err := os.Remove(filepath.Join(state, "ingot.db")); err != nil {
		t.Fatal(err)
	}

	out := shell.run(docBlock(t, "Restore"))
	if n := strings.Count(out, "audit: OK\n"); n != 2 {
		t.Errorf("the restore printed %d audit: OK, want 2 (the copy's, then the server's):\n%s", n, out)
	}
	if got := ingot("balance", "-P"); got != atBackup {
		t.Errorf("balances after the restore:\n%s\nwant those of the copy:\n%s", got, atBackup)
	}
	// The bank restored and the server key that stayed in place open the
	// key made at the first start.
	cmd := exec.Command(filepath.Join(bin, "ingot"), "--server", srv.url, "--key-file", filepath.Join(home, "ingot-admin.key"), "audit")
	cmd.Env = operatorEnv(home)
	if out := run(t, cmd); !strings.HasSuffix(out, "audit: OK\n") {
		t.Errorf("the admin key over TCP: %s", out)
	}
}
