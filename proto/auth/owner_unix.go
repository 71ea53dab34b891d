//go:build unix

package auth

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a secret file owned by a user other than this
// process's (or root): as for ssh's keys, a secret another user owns is one
// that user may change or read, whatever its mode says now.
func checkOwner(path string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if me := os.Geteuid(); int(st.Uid) != me && st.Uid != 0 {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this process's user (uid %d) or root; it holds a secret: "+
			"run this as its owner (runuser -u USER -- ...), or chown %d %s", ErrSecretFileOwner, path, st.Uid, me, me, path)
	}
	return nil
}
