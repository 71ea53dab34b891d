package contrib

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// installed are the files of `make install PREFIX=/usr`, with their modes.
var installed = map[string]fs.FileMode{
	"/usr/bin/ingot":                                  0o755,
	"/usr/share/man/man1/ingot.1":                     0o644,
	"/usr/share/bash-completion/completions/ingot":    0o644,
	"/usr/share/zsh/site-functions/_ingot":            0o644,
	"/usr/share/fish/vendor_completions.d/ingot.fish": 0o644,
	"/usr/lib/systemd/system/ingot.service":           0o644,
	"/usr/lib/systemd/system/ingot-backup.service":    0o644,
	"/usr/lib/systemd/system/ingot-backup.timer":      0o644,
	"/usr/lib/systemd/system/ingot-notify.service":    0o644,
	"/usr/lib/systemd/system/ingot-notify.timer":      0o644,
	"/usr/libexec/ingot/ingot-backup":                 0o755,
	"/usr/lib/sysusers.d/ingot.conf":                  0o644,
	"/usr/lib/tmpfiles.d/ingot.conf":                  0o644,
	"/etc/ingot/ingot.toml":                           0o644,
}

// packaged are the files of a package made by packager (deb or rpm): those
// of make install, with the man page gzipped, and in the .deb the zsh
// completion where Debian's zsh reads it; and the documentation, README.md
// and docs/*.md gzipped, with the copyright file (the .rpm's where RHEL
// keeps licences) and, in the .deb, Debian's changelog.
func packaged(packager string) map[string]fs.FileMode {
	files := maps.Clone(installed)
	files["/usr/share/man/man1/ingot.1.gz"] = files["/usr/share/man/man1/ingot.1"]
	delete(files, "/usr/share/man/man1/ingot.1")
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, doc := range append(docs, filepath.Join(root, "README.md")) {
		rel, _ := filepath.Rel(root, doc)
		files["/usr/share/doc/ingot/"+filepath.ToSlash(rel)+".gz"] = 0o644
	}
	if packager == "deb" {
		files["/usr/share/zsh/vendor-completions/_ingot"] = files["/usr/share/zsh/site-functions/_ingot"]
		delete(files, "/usr/share/zsh/site-functions/_ingot")
		files["/usr/share/doc/ingot/copyright"] = 0o644
		files["/usr/share/doc/ingot/changelog.Debian.gz"] = 0o644
	} else {
		files["/usr/share/licenses/ingot/copyright"] = 0o644
	}
	return files
}

// documentedAs is how docs/operations.md names a packaged file: as itself,
// or, for the pages of docs/, all of them at once.
func documentedAs(path string) string {
	if strings.HasPrefix(path, "/usr/share/doc/ingot/docs/") {
		return "/usr/share/doc/ingot/docs/*.md.gz"
	}
	return path
}

// filesUnder returns the files under dir (paths from dir, with a leading
// /) and their modes.
func filesUnder(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	got := map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		got["/"+filepath.ToSlash(rel)] = info.Mode()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sameFiles fails the test where got and want differ.
func sameFiles(t *testing.T, what string, got, want map[string]fs.FileMode) {
	t.Helper()
	for _, path := range slices.Sorted(maps.Keys(want)) {
		if mode, ok := got[path]; !ok {
			t.Errorf("%s: no %s", what, path)
		} else if mode != want[path] {
			t.Errorf("%s: %s has mode %v, want %v", what, path, mode, want[path])
		}
	}
	for _, path := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[path]; !ok {
			t.Errorf("%s: %s, which the test does not know", what, path)
		}
	}
}

// TestInstall runs make install into a DESTDIR as the packages do and
// finds each file with its mode, each file of the packages in
// docs/operations.md, the binary stamped with the version of
// contrib/packaging/version.sh and the commit,
// and, installed with another PREFIX, the units and the backup script
// naming the files there; an install over an existing config keeps it.
func TestInstall(t *testing.T) {
	// The version and commit make install stamps in the binary.
	semver := strings.TrimSpace(run(t, exec.Command(filepath.Join(root, "contrib", "packaging", "version.sh"))))
	head := strings.TrimSpace(run(t, exec.Command("git", "-C", root, "rev-parse", "HEAD")))
	dest := t.TempDir()
	runMake(t, "install", "DESTDIR="+dest, "PREFIX=/usr")
	sameFiles(t, "make install", filesUnder(t, dest), installed)

	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := packaged("deb")
	maps.Copy(documented, packaged("rpm"))
	for path := range documented {
		if !strings.Contains(string(doc), "`"+documentedAs(path)+"`") {
			t.Errorf("docs/operations.md does not list %s", documentedAs(path))
		}
	}

	for path, want := range map[string]string{
		"/usr/share/man/man1/ingot.1":                     ".TH ingot 1",
		"/usr/share/bash-completion/completions/ingot":    "complete -o default -F _ingot ingot",
		"/usr/share/zsh/site-functions/_ingot":            "#compdef ingot",
		"/usr/share/fish/vendor_completions.d/ingot.fish": "complete -c ingot",
	} {
		if b, err := os.ReadFile(filepath.Join(dest, path)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v; want a file with %q, got:\n%.300s", path, err, want, b)
		}
	}

	version := run(t, exec.Command(filepath.Join(dest, "usr", "bin", "ingot"), "version"))
	if want := "ingot " + semver + "\ncommit " + head + "\n"; !strings.HasPrefix(version, want) {
		t.Errorf("ingot version printed:\n%s\nwant it to start with:\n%s", version, want)
	}

	elsewhere := t.TempDir()
	runMake(t, "install", "DESTDIR="+elsewhere, "PREFIX=/opt/ingot")
	for file, want := range map[string]string{
		"opt/ingot/lib/systemd/system/ingot.service":        "\nExecStart=/opt/ingot/bin/ingot serve --config /etc/ingot/ingot.toml\n",
		"opt/ingot/lib/systemd/system/ingot-backup.service": "\nExecStart=/opt/ingot/libexec/ingot/ingot-backup\n",
		"opt/ingot/lib/systemd/system/ingot-notify.service": "\nExecStart=/opt/ingot/bin/ingot notify\n",
		"opt/ingot/libexec/ingot/ingot-backup":              "\n/opt/ingot/bin/ingot backup ",
	} {
		if b, err := os.ReadFile(filepath.Join(elsewhere, file)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("PREFIX=/opt/ingot: %s: %v; want %q in it", file, err, want)
		}
	}

	config := filepath.Join(dest, "etc", "ingot", "ingot.toml")
	const mine = "# the operator's settings\n"
	if err := os.WriteFile(config, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	runMake(t, "install", "DESTDIR="+dest, "PREFIX=/usr")
	if b, err := os.ReadFile(config); err != nil || string(b) != mine {
		t.Errorf("a second make install left %s as %q (%v), want the operator's %q", config, b, err, mine)
	}
}

// verifyUnits runs systemd-analyze verify on the units of unitDir, man
// pages looked up in manPath too; it wants not a word from it: a warning
// is a failure.
func verifyUnits(t *testing.T, unitDir, manPath string) {
	t.Helper()
	analyze := needTool(t, "systemd-analyze", "systemd")
	needTool(t, "man", "man-db") // verify looks up the units' man: documentation with it
	cmd := exec.Command(analyze, "verify", "ingot.service", "ingot-backup.service", "ingot-backup.timer", "ingot-notify.service", "ingot-notify.timer")
	cmd.Dir = unitDir
	cmd.Env = append(os.Environ(), "MANPATH="+manPath+":")
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify in %s: %v\n%s", unitDir, err, out)
	}
}

// TestSystemdVerify has systemd-analyze verify the units as make install
// puts them. verify checks that the programs they run and the man page
// they name exist, so they are installed with a PREFIX of their own, where
// the paths they name are real: verify --root on a DESTDIR would look for
// systemd's own units and /bin/kill in that tree too.
func TestSystemdVerify(t *testing.T) {
	prefix := installPrefix(t)
	verifyUnits(t, filepath.Join(prefix, "lib", "systemd", "system"), filepath.Join(prefix, "share", "man"))
}

// TestServiceHardening has systemd-analyze security rate the services as
// installed and wants no exposure but those each leaves open on purpose:
// a setting dropped, or loosened, fails it.
func TestServiceHardening(t *testing.T) {
	analyze := needTool(t, "systemd-analyze", "systemd")
	unitDir := filepath.Join(installPrefix(t), "lib", "systemd", "system")
	// What each leaves open, and why.
	both := map[string]string{
		"RootDirectoryOrRootImage":        "runs on the host's file system",
		"DeviceAllow":                     "ProtectClock's read of the RTC",
		"RestrictAddressFamilies_AF_UNIX": "the server's socket",
	}
	open := map[string]map[string]string{
		"ingot.service": {
			"RestrictAddressFamilies_AF_INET_INET6": "serves the API over TCP",
			"PrivateNetwork":                        "serves the API over TCP",
			"IPAddressDeny":                         "the site says which hosts are its clients",
			"PrivateUsers":                          "the uid of a socket peer must read as itself",
			"ProcSubset":                            "the process metrics read the boot time in /proc/stat",
		},
		"ingot-backup.service": {
			"PrivateUsers": "user namespaces are off on some hosts, and the unit would not start there",
		},
		"ingot-notify.service": {
			"PrivateUsers": "user namespaces are off on some hosts, and the unit would not start there",
		},
	}
	for unit, extra := range open {
		maps.Copy(extra, both)
		cmd := exec.Command(analyze, "security", "--offline=yes", "--json=short", unit)
		cmd.Dir = unitDir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("systemd-analyze security %s: %v\n%s", unit, err, out)
		}
		var checks []struct {
			Set   bool   `json:"set"`
			Field string `json:"json_field"`
			Name  string `json:"name"`
		}
		if err := json.Unmarshal(out, &checks); err != nil {
			t.Fatalf("systemd-analyze security %s: %v\n%s", unit, err, out)
		}
		for _, c := range checks {
			if _, ok := extra[c.Field]; !c.Set && !ok {
				t.Errorf("%s: %s is not set (%s)", unit, c.Name, c.Field)
			}
		}
	}
}
