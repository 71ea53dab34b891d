package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes a config file and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ingot.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runIngot runs the command line as main does and returns its output and
// exit code.
func runIngot(args ...string) (string, int) {
	var out bytes.Buffer
	code := run(append([]string{"ingot"}, args...), &out, &out)
	return out.String(), code
}

// TestServeConfigPrecedence checks that a flag beats its INGOT_* variable,
// which beats the config file. Each case fails at once, on the value that
// won: a database that does not exist, or a port out of range.
func TestServeConfigPrecedence(t *testing.T) {
	b := newCLIBank(t)
	b.clientKey("root", "--role", "admin") // serve needs the server key
	noDB := filepath.Join(t.TempDir(), "none")
	file := writeConfig(t, `db = "`+noDB+`/file.db"`+"\n"+`listen = "127.0.0.1:99991"`+"\n")
	fileListen := writeConfig(t, `listen = "127.0.0.1:99991"`+"\n")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"file", nil, []string{"serve", "--config", file}, "file.db"},
		{"INGOT_CONFIG names the file", map[string]string{"INGOT_CONFIG": file}, []string{"serve"}, "file.db"},
		{"variable beats file", map[string]string{"INGOT_DB": noDB + "/env.db"}, []string{"serve", "--config", file}, "env.db"},
		{"flag beats variable and file", map[string]string{"INGOT_DB": noDB + "/env.db"},
			[]string{"serve", "--config", file, "--db", noDB + "/flag.db"}, "flag.db"},
		{"flag before the command beats file", nil, []string{"--db", noDB + "/flag.db", "serve", "--config", file}, "flag.db"},
		{"serve's own flag: file", nil, []string{"--db", b.db, "serve", "--config", fileListen}, "99991"},
		{"serve's own flag: variable beats file", map[string]string{"INGOT_LISTEN": "127.0.0.1:99992"},
			[]string{"--db", b.db, "serve", "--config", fileListen}, "99992"},
		{"serve's own flag: flag beats variable", map[string]string{"INGOT_LISTEN": "127.0.0.1:99992"},
			[]string{"--db", b.db, "serve", "--config", fileListen, "--listen", "127.0.0.1:99993"}, "99993"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			out, code := runIngot(tc.args...)
			if code == exitOK || !strings.Contains(out, tc.want) {
				t.Errorf("ingot %s: exit %d, %q; want it to fail on %s", strings.Join(tc.args, " "), code, out, tc.want)
			}
		})
	}
}

// TestServeConfigErrors checks that a bad config file is refused before
// anything is opened, with an error that names the file and the key.
func TestServeConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		flags      []string
		code       int
		says       []string
	}{
		{"unknown key", `lisen = "127.0.0.1:8080"`, nil, exitUsage, []string{`unknown key "lisen"`, "listen"}},
		{"table", "[serve]\nlisten = \"127.0.0.1:8080\"", nil, exitUsage, []string{`unknown key "serve"`}},
		{"config names a config", `config = "other.toml"`, nil, exitUsage, []string{`unknown key "config"`}},
		{"not a string", `listen = 8080`, nil, exitUsage, []string{"key listen", "want a string"}},
		{"not a string, though a flag overrides it", `listen = 8080`, []string{"--listen", "127.0.0.1:0"}, exitUsage, []string{"key listen", "want a string"}},
		{"bad log level", `log-level = "loud"`, nil, exitUsage, []string{"key log-level", `"loud"`, "debug, info, warn or error"}},
		{"not TOML", `listen = `, nil, exitUsage, []string{"line 1"}},
		{"missing", "", nil, exitError, []string{"no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "missing.toml")
			if tc.name != "missing" {
				path = writeConfig(t, tc.text)
			}
			out, code := runIngot(append([]string{"serve", "--config", path}, tc.flags...)...)
			if code != tc.code || !strings.Contains(out, path) {
				t.Errorf("exit %d, %q; want exit %d naming %s", code, out, tc.code, path)
			}
			for _, s := range tc.says {
				if !strings.Contains(out, s) {
					t.Errorf("%q does not say %q", out, s)
				}
			}
		})
	}
}

// TestLogLevelRefused checks that a bad --log-level is refused from the
// command line and from its variable too.
func TestLogLevelRefused(t *testing.T) {
	if out, code := runIngot("serve", "--log-level", "verbose"); code != exitUsage || !strings.Contains(out, `"verbose"`) {
		t.Errorf("--log-level verbose: exit %d, %q", code, out)
	}
	t.Setenv("INGOT_LOG_LEVEL", "verbose")
	if out, code := runIngot("serve"); code == exitOK || !strings.Contains(out, "INGOT_LOG_LEVEL") {
		t.Errorf("INGOT_LOG_LEVEL=verbose: exit %d, %q", code, out)
	}
}

// TestExampleConfig checks that contrib/ingot.toml, the documented example,
// is accepted: serve gets as far as opening the database it names. The
// example's /var/lib/ingot is moved to a directory of the test's, where no
// bank is whatever the host has (contrib's package test makes one there).
func TestExampleConfig(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "..", "contrib", "ingot.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := writeConfig(t, strings.ReplaceAll(string(example), `"/var/lib/ingot/`, `"`+dir+`/`))
	out, code := runIngot("serve", "--config", file)
	if code != exitUnavailable || !strings.Contains(out, dir+"/ingot.db does not exist") {
		t.Errorf("exit %d, %q; want the example's database to be missing", code, out)
	}
}

// TestUsageReportPeriodRefused checks that a usage report period that
// does not divide a day is refused, from the flag, its variable and the
// config file alike, before anything is opened.
func TestUsageReportPeriodRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		env  string
		args []string
	}{
		"flag":     {"", []string{"serve", "--usage-report-period", "7m"}},
		"variable": {"7m", []string{"serve"}},
		"file":     {"", []string{"serve", "--config", writeConfig(t, `usage-report-period = "7m"`+"\n")}},
		"too long": {"", []string{"serve", "--usage-report-period", "48h"}},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("INGOT_USAGE_REPORT_PERIOD", tc.env)
			}
			if out, code := runIngot(tc.args...); code != exitUsage || !strings.Contains(out, "--usage-report-period") || !strings.Contains(out, "divide a day") {
				t.Errorf("exit %d, %q; want a usage error", code, out)
			}
		})
	}
}
