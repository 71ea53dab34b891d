package lazyfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// MaxFileSize is the largest a file may grow (EFBIG past it): content is
// kept in memory, and a stray offset should fail, not exhaust it.
const MaxFileSize = 1 << 32

// State is what the disk holds: the durable part of a file system. Paths
// are slash-separated and relative to the mount point ("db/bank.db").
type State struct {
	// Files holds every regular file.
	Files map[string]File
	// Dirs holds the permission bits of every directory below the root
	// (zero reads as 0755). A file's parent directories need not be
	// listed; an empty directory must be.
	Dirs map[string]os.FileMode
}

// File is one regular file of a State.
type File struct {
	Data []byte      // the durable content
	Perm os.FileMode // permission bits; zero reads as 0644
}

// FS is a mounted lazy file system. Its methods may be called from any
// goroutine.
type FS struct {
	dir    string
	server *fuse.Server
	uid    uint32
	gid    uint32
	conn   uint32 // the FUSE connection's number: the mount's device

	mu        sync.Mutex // guards everything below and every node
	root      *node
	nextIno   uint64
	off       bool          // PowerCut was called
	syncErr   syscall.Errno // FailSyncs
	syncs     int
	unmounted bool
}

// node is a file or directory of the model. It is the truth about names
// and content; the go-fuse inodes that the kernel holds only point here,
// so a snapshot under FS.mu sees every change whole.
type node struct {
	ino     uint64
	dir     bool
	perm    uint32
	mtime   time.Time
	kids    map[string]*node // directories
	cur     []byte           // files: what reads see
	durable []byte           // files: what survives PowerCut; never shares memory with cur

	// What a sync must copy, so that its cost follows what was written
	// rather than the file's size (bbolt syncs a growing file at every
	// commit): cur[:synced] equals durable[:synced] except in the dirty
	// blocks; past synced, everything is copied.
	synced int
	dirty  map[int]bool // block numbers, of blockSize bytes
}

// Mount mounts at dir, an existing empty directory, a file system whose
// content starts as durable (nil: empty). The caller keeps durable: Mount
// copies it. The FUSE server runs in this process until Unmount.
func Mount(dir string, durable *State) (*FS, error) {
	dir, err := filepath.Abs(dir) // to unmount it from anywhere
	if err != nil {
		return nil, fmt.Errorf("lazyfs: mount %s: %w", dir, err)
	}
	f := &FS{dir: dir, uid: uint32(os.Getuid()), gid: uint32(os.Getgid()), nextIno: fuse.FUSE_ROOT_ID}
	f.root = &node{ino: fuse.FUSE_ROOT_ID, dir: true, perm: 0755, mtime: time.Now(), kids: map[string]*node{}}
	if err := f.load(durable); err != nil {
		return nil, err
	}
	root := os.Geteuid() == 0
	if !root && fusermount() == "" {
		return nil, fmt.Errorf("lazyfs: mount %s: only root may mount without fusermount, and there is none: %w", dir, fs.ErrPermission)
	}
	zero := time.Duration(0)
	opts := &gofs.Options{
		MountOptions: fuse.MountOptions{
			FsName: "lazyfs",
			Name:   "lazyfs",
			// Root mounts with mount(2) itself, so no fusermount is
			// needed, and a refusal comes back as the errno that says
			// why; anyone else needs fusermount.
			DirectMountStrict: root,
			DisableXAttrs:     true,
		},
		// Zero timeouts: the kernel asks us for every name and size,
		// so what it shows is always our model.
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		UID:             f.uid,
		GID:             f.gid,
	}
	server, err := gofs.Mount(dir, &inode{fsys: f, n: f.root}, opts)
	if err != nil {
		return nil, fmt.Errorf("lazyfs: mount %s: %w", dir, err)
	}
	f.server = server
	// The connection's number, for aborting it should Unmount find it
	// still held. Taken now: after PowerCut even a stat of the root fails.
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err == nil {
		f.conn = unix.Major(st.Dev)<<20 | unix.Minor(st.Dev) // the kernel's MKDEV
	}
	return f, nil
}

// Dir is the mount point.
func (f *FS) Dir() string { return f.dir }

// PowerCut turns the machine off: every later request fails with EIO. It
// returns a deep copy of the durable state, what a disk would hold now;
// calling it again returns the same.
func (f *FS) PowerCut() *State {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.off = true
	st := &State{Files: map[string]File{}, Dirs: map[string]os.FileMode{}}
	var walk func(dir string, n *node)
	walk = func(dir string, n *node) {
		for name, c := range n.kids {
			p := path.Join(dir, name)
			if c.dir {
				st.Dirs[p] = os.FileMode(c.perm)
				walk(p, c)
			} else {
				st.Files[p] = File{Data: bytes.Clone(c.durable), Perm: os.FileMode(c.perm)}
			}
		}
	}
	walk("", f.root)
	return st
}

// FailSyncs makes every later fsync and fdatasync return errno and make
// nothing durable, as a failing disk would; FailSyncs(0) heals the disk.
func (f *FS) FailSyncs(errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncErr = errno
}

// Syncs is how many fsync and fdatasync calls, of files and directories,
// have succeeded.
func (f *FS) Syncs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

// Unmount detaches the file system and stops its server. It detaches
// lazily, so it works even while a process (a killed one not yet reaped,
// or a stuck one) still holds files there; the server then stops when the
// last of them is closed. Unmount does not cut the power: call PowerCut
// first to get the durable state as of a crash.
func (f *FS) Unmount() error {
	f.mu.Lock()
	done := f.unmounted
	f.unmounted = true
	f.mu.Unlock()
	if done {
		return nil
	}
	if err := detach(f.dir); err != nil {
		return fmt.Errorf("lazyfs: unmount %s: %w", f.dir, err)
	}
	stopped := make(chan struct{})
	go func() { f.server.Wait(); close(stopped) }()
	select {
	case <-stopped:
		return nil
	case <-time.After(5 * time.Second):
	}
	// A process still holds files there. The mount point is free for a
	// new mount already, but this server would serve until the process
	// lets go: abort the connection, where fusectl is mounted, so that
	// the process's calls fail and the server stops.
	abort := fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", f.conn)
	if err := os.WriteFile(abort, []byte("1"), 0); err != nil {
		return fmt.Errorf("lazyfs: unmount %s: detached, but a process still holds files there and the connection cannot be aborted: %w", f.dir, err)
	}
	select {
	case <-stopped:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("lazyfs: unmount %s: detached and aborted, but the server has not stopped", f.dir)
	}
}

// detach unmounts dir lazily (MNT_DETACH): with mount(2)'s own call
// where we may, else with fusermount -u -z.
func detach(dir string) error {
	err := syscall.Unmount(dir, syscall.MNT_DETACH)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if bin := fusermount(); bin != "" {
		out, runErr := exec.Command(bin, "-u", "-z", dir).CombinedOutput()
		if runErr != nil {
			return fmt.Errorf("%s -u -z: %w: %s", bin, runErr, strings.TrimSpace(string(out)))
		}
		return nil
	}
	return fmt.Errorf("umount: %w, and no fusermount to ask", err)
}

// fusermount is the path of the helper that mounts for users other than
// root, or "" if there is none; go-fuse looks for the same names.
func fusermount() string {
	for _, name := range []string{"fusermount3", "fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func (f *FS) newNode(dir bool, perm uint32) *node {
	f.nextIno++
	n := &node{ino: f.nextIno, dir: dir, perm: perm & 07777, mtime: time.Now()}
	if dir {
		n.kids = map[string]*node{}
	}
	return n
}

// load builds the model from st, which it copies.
func (f *FS) load(st *State) error {
	if st == nil {
		return nil
	}
	for p, perm := range st.Dirs {
		if p == "." {
			return fmt.Errorf("lazyfs: state: the root is not a directory to list")
		}
		d, err := f.mkdirAll(p)
		if err != nil {
			return err
		}
		if d.perm = uint32(perm.Perm()); d.perm == 0 {
			d.perm = 0755
		}
	}
	for p, file := range st.Files {
		if !fs.ValidPath(p) || p == "." {
			return fmt.Errorf("lazyfs: state: invalid file path %q", p)
		}
		parent, err := f.mkdirAll(path.Dir(p))
		if err != nil {
			return err
		}
		name := path.Base(p)
		if _, ok := parent.kids[name]; ok {
			return fmt.Errorf("lazyfs: state: %q is both a file and a directory", p)
		}
		perm := uint32(file.Perm.Perm())
		if perm == 0 {
			perm = 0644
		}
		n := f.newNode(false, perm)
		n.durable = bytes.Clone(file.Data)
		n.cur = bytes.Clone(file.Data)
		n.synced = len(n.cur)
		parent.kids[name] = n
	}
	return nil
}

// mkdirAll returns the directory at p ("." is the root), making it and
// its parents (0755) as needed.
func (f *FS) mkdirAll(p string) (*node, error) {
	if !fs.ValidPath(p) {
		return nil, fmt.Errorf("lazyfs: state: invalid directory path %q", p)
	}
	n := f.root
	if p == "." {
		return n, nil
	}
	for _, name := range strings.Split(p, "/") {
		c, ok := n.kids[name]
		if !ok {
			c = f.newNode(true, 0755)
			n.kids[name] = c
		} else if !c.dir {
			return nil, fmt.Errorf("lazyfs: state: %q is both a file and a directory", p)
		}
		n = c
	}
	return n, nil
}
