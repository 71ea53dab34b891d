package main

import (
	"bytes"
	"runtime"
	"testing"
)

// TestVersionLines: what ingot version prints, line by line, for a
// release's static binary and a package's cgo one (contrib's tests and
// operators read the first two lines: the version and the commit).
func TestVersionLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    buildInfo
		want string
	}{
		{"static release binary", buildInfo{Version: "0.9.0", Commit: "0123456789abcdef0123456789abcdef01234567", Go: "go1.26.8", Platform: "linux/arm64", Schema: 12, PostgresSchema: 3},
			"ingot 0.9.0\ncommit 0123456789abcdef0123456789abcdef01234567\ngo     go1.26.8\n" +
				"built  linux/arm64, static, without cgo: users from /etc/passwd only\nschema 12 (bank files), 3 (PostgreSQL)\n"},
		{"development build with changes", buildInfo{Version: "0.9.1-dev.3+g0123456.dirty", Commit: "0123456789abcdef0123456789abcdef01234567", Modified: true,
			Go: "go1.26.8", Platform: "linux/amd64", CGO: true, Schema: 12, PostgresSchema: 3},
			"ingot 0.9.1-dev.3+g0123456.dirty\ncommit 0123456789abcdef0123456789abcdef01234567 (with uncommitted changes)\ngo     go1.26.8\n" +
				"built  linux/amd64, cgo\nschema 12 (bank files), 3 (PostgreSQL)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			writeVersion(&out, tc.b)
			if out.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
	if b := currentBuild(); b.Platform != runtime.GOOS+"/"+runtime.GOARCH || b.Version == "" {
		t.Errorf("currentBuild() = %+v, want this platform and a version", b)
	}
}
