package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagBeatsVariable: a global flag given on the command line beats
// every variable, its own and those of the flags it is an alternative to
// (a bank: --db, --store, --server; an identity: --key-file, --use-munge).
// The bank served is "live", the other file "copy": each case says which
// one the command reached, by the account it finds.
func TestFlagBeatsVariable(t *testing.T) {
	live := newCLIBank(t)
	live.ok("account", "create", "live")
	keyFile := filepath.Join(t.TempDir(), "admin.key")
	if err := os.WriteFile(keyFile, live.clientKey("root", "--role", "admin").KeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}
	copyBank := newCLIBank(t)
	copyBank.ok("account", "create", "copy")
	srv := startServe(t, "--db", live.db, "serve", "--listen", "127.0.0.1:0")
	server := srv.line(t, "listening on ")
	unreachableStore := "postgres://ingot@127.0.0.1:1/none?connect_timeout=2"
	badKey := filepath.Join(t.TempDir(), "missing.key")

	for _, tc := range []struct {
		name      string
		variables map[string]string
		args      []string
		reaches   string // the account the command finds: live or copy
		says      string // and what else its output holds
	}{
		// The bank: a flag beats the variables of the other ways to name one.
		{"--db beats INGOT_SERVER", map[string]string{"INGOT_SERVER": server, "INGOT_KEY_FILE": keyFile},
			[]string{"--db", copyBank.db}, "copy", "not on INGOT_SERVER=" + server},
		{"--db beats INGOT_STORE", map[string]string{"INGOT_STORE": unreachableStore},
			[]string{"--db", copyBank.db}, "copy", ""},
		{"--db beats INGOT_DB", map[string]string{"INGOT_DB": live.db},
			[]string{"--db", copyBank.db}, "copy", ""},
		{"--server beats INGOT_DB", map[string]string{"INGOT_DB": copyBank.db},
			[]string{"--server", server, "--key-file", keyFile}, "live", ""},
		{"--server beats INGOT_SERVER", map[string]string{"INGOT_SERVER": "http://127.0.0.1:1"},
			[]string{"--server", server, "--key-file", keyFile}, "live", ""},
		{"a flag after the command beats the variable too", map[string]string{"INGOT_SERVER": server, "INGOT_KEY_FILE": keyFile},
			[]string{"account", "list", "--db", copyBank.db}, "copy", "not on INGOT_SERVER"},
		// Who the client is: a flag beats the other way's variable.
		{"--key-file beats INGOT_USE_MUNGE", map[string]string{"INGOT_SERVER": server, "INGOT_USE_MUNGE": "1"},
			[]string{"--key-file", keyFile}, "live", ""},
		{"--key-file beats INGOT_KEY_FILE", map[string]string{"INGOT_SERVER": server, "INGOT_KEY_FILE": badKey},
			[]string{"--key-file", keyFile}, "live", ""},
		// Variables alone still work.
		{"INGOT_SERVER alone", map[string]string{"INGOT_SERVER": server, "INGOT_KEY_FILE": keyFile},
			nil, "live", ""},
		{"INGOT_DB alone", map[string]string{"INGOT_DB": copyBank.db},
			nil, "copy", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{"INGOT_DB", "INGOT_STORE", "INGOT_SERVER", "INGOT_KEY_FILE", "INGOT_USE_MUNGE"} {
				t.Setenv(v, tc.variables[v])
			}
			args := tc.args
			if len(args) == 0 || !strings.HasPrefix(args[0], "account") {
				args = append(append([]string{}, args...), "account", "list")
			}
			var out strings.Builder
			code := run(append([]string{"ingot"}, args...), &out, &out)
			other := map[string]string{"live": "copy", "copy": "live"}[tc.reaches]
			if code != exitOK || !strings.Contains(out.String(), tc.reaches) || strings.Contains(out.String(), other+" ") ||
				!strings.Contains(out.String(), tc.says) {
				t.Errorf("ingot %s with %v exited %d:\n%s\nwant the %s bank's accounts%s", strings.Join(args, " "), tc.variables, code, out.String(),
					tc.reaches, map[bool]string{true: "", false: " and " + tc.says}[tc.says == ""])
			}
		})
	}

	// --use-munge beats INGOT_KEY_FILE: the command asks munged for a
	// credential (there is none here) rather than reading the key.
	t.Setenv("INGOT_DB", "")
	t.Setenv("INGOT_STORE", "")
	t.Setenv("INGOT_SERVER", server)
	t.Setenv("INGOT_KEY_FILE", keyFile)
	t.Setenv("INGOT_USE_MUNGE", "")
	var out strings.Builder
	code := run([]string{"ingot", "--use-munge", "--munge-socket", filepath.Join(t.TempDir(), "no-munged"), "account", "list"}, &out, &out)
	if code == exitOK || !strings.Contains(strings.ToLower(out.String()), "munge") {
		t.Errorf("--use-munge with INGOT_KEY_FILE set exited %d:\n%s\nwant MUNGE tried", code, out.String())
	}
	// Both flags of one group on the command line are still a mistake.
	out.Reset()
	if code := run([]string{"ingot", "--server", server, "--key-file", keyFile, "--use-munge", "account", "list"}, &out, &out); code != exitUsage {
		t.Errorf("--key-file with --use-munge exited %d:\n%s", code, out.String())
	}
}
