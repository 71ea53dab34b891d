package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/linebuf"
	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
)

// TestBackupInterrupted: `ingot backup` stopped by Ctrl-C (SIGINT) or
// SIGTERM while the copy streams in removes its temporary file, exits 130
// and says it was interrupted; the destination is not made. The server is
// one that sends part of a copy and then nothing, so the signal always
// comes mid-copy.
func TestBackupInterrupted(t *testing.T) {
	stalled := make(chan struct{})
	t.Cleanup(func() { close(stalled) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case api.PathSettings:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(api.Settings{Settings: ledger.Settings{Precision: 2}})
		case api.PathBackup:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(make([]byte, 64<<10))
			w.(http.Flusher).Flush()
			select {
			case <-stalled:
			case <-r.Context().Done():
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	key, err := auth.NewKey("root")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "root.key")
	if err := os.WriteFile(keyFile, key.KeyFile(), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			dest := filepath.Join(dir, "ingot-copy.db")
			cmd := exec.Command(os.Args[0], "--server", srv.URL, "--key-file", keyFile, "backup", dest)
			cmd.Env = append(os.Environ(), envRunAsIngot+"=1", "INGOT_SERVER=", "INGOT_DB=")
			var out linebuf.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if _, err := cmd.StdinPipe(); err != nil { // closed by Wait: see TestMain
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait for the temporary file to hold what the server sent.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if partial, _ := filepath.Glob(filepath.Join(dir, ".ingot-backup-*")); len(partial) == 1 && fileSize(partial[0]) > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("no partial copy after 10 s:\n%s", out.String())
				}
			}
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("backup did not stop within 10 s of %s:\n%s", sig, out.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(out.String(), "interrupted") {
				t.Errorf("backup stopped by %s exited %d:\n%s", sig, code, out.String())
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("backup stopped by %s left %v", sig, left)
			}
		})
	}
}
