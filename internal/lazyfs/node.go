package lazyfs

import (
	"context"
	"maps"
	"slices"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// inode is what go-fuse and the kernel hold for a node. The kernel may
// forget it while the node lives on; Lookup then makes a new one for the
// same node, and go-fuse matches the two by inode number.
type inode struct {
	gofs.Inode
	fsys *FS
	n    *node
}

// The requests this file system answers; go-fuse answers the rest.
var (
	_ gofs.NodeLookuper  = (*inode)(nil)
	_ gofs.NodeReaddirer = (*inode)(nil)
	_ gofs.NodeOpendirer = (*inode)(nil)
	_ gofs.NodeGetattrer = (*inode)(nil)
	_ gofs.NodeSetattrer = (*inode)(nil)
	_ gofs.NodeStatfser  = (*inode)(nil)
	_ gofs.NodeCreater   = (*inode)(nil)
	_ gofs.NodeMkdirer   = (*inode)(nil)
	_ gofs.NodeUnlinker  = (*inode)(nil)
	_ gofs.NodeRmdirer   = (*inode)(nil)
	_ gofs.NodeRenamer   = (*inode)(nil)
	_ gofs.NodeOpener    = (*inode)(nil)
	_ gofs.NodeReader    = (*inode)(nil)
	_ gofs.NodeWriter    = (*inode)(nil)
	_ gofs.NodeFlusher   = (*inode)(nil)
	_ gofs.NodeFsyncer   = (*inode)(nil)
	_ gofs.NodeAllocater = (*inode)(nil)
)

// lock takes the file system's lock for a request, unless the power is
// off: then the request fails with EIO and holds no lock.
func (i *inode) lock() syscall.Errno {
	i.fsys.mu.Lock()
	if i.fsys.off {
		i.fsys.mu.Unlock()
		return syscall.EIO
	}
	return 0
}

func (i *inode) unlock() { i.fsys.mu.Unlock() }

// child returns the go-fuse inode for c, a node below i.
func (i *inode) child(ctx context.Context, c *node) *gofs.Inode {
	return i.NewInode(ctx, &inode{fsys: i.fsys, n: c}, gofs.StableAttr{Mode: c.mode() &^ 07777, Ino: c.ino})
}

func (n *node) mode() uint32 {
	if n.dir {
		return syscall.S_IFDIR | n.perm
	}
	return syscall.S_IFREG | n.perm
}

func (i *inode) attr(c *node, a *fuse.Attr) {
	a.Ino = c.ino
	a.Mode = c.mode()
	a.Size = uint64(len(c.cur))
	a.Blocks = (a.Size + 511) / 512
	a.Nlink = 1
	if c.dir {
		a.Nlink = 2
	}
	a.Owner = fuse.Owner{Uid: i.fsys.uid, Gid: i.fsys.gid}
	a.SetTimes(nil, &c.mtime, &c.mtime)
}

func (i *inode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if e := i.lock(); e != 0 {
		return nil, e
	}
	defer i.unlock()
	c, ok := i.n.kids[name]
	if !ok {
		return nil, syscall.ENOENT
	}
	i.attr(c, &out.Attr)
	return i.child(ctx, c), 0
}

func (i *inode) Opendir(ctx context.Context) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	i.unlock()
	return 0
}

func (i *inode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	if e := i.lock(); e != 0 {
		return nil, e
	}
	defer i.unlock()
	// Sorted: go-fuse wants the same listing for the same directory.
	var list []fuse.DirEntry
	for _, name := range slices.Sorted(maps.Keys(i.n.kids)) {
		c := i.n.kids[name]
		list = append(list, fuse.DirEntry{Name: name, Ino: c.ino, Mode: c.mode()})
	}
	return gofs.NewListDirStream(list), 0
}

func (i *inode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	defer i.unlock()
	i.attr(i.n, &out.Attr)
	return 0
}

func (i *inode) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	defer i.unlock()
	if size, ok := in.GetSize(); ok {
		if i.n.dir {
			return syscall.EISDIR
		}
		if size > MaxFileSize {
			return syscall.EFBIG
		}
		i.n.resize(int(size))
	}
	if mode, ok := in.GetMode(); ok {
		i.n.perm = mode & 07777
	}
	if mtime, ok := in.GetMTime(); ok {
		i.n.mtime = mtime
	}
	// Owner changes are ignored: every file belongs to the mounting user.
	i.attr(i.n, &out.Attr)
	return 0
}

// blockSize is the unit in which writes are tracked for the next sync.
const blockSize = 4096

// resize cuts or zero-extends the current bytes to size.
func (n *node) resize(size int) {
	n.cur = setLen(n.cur, size)
	n.synced = min(n.synced, size)
	n.mtime = time.Now()
}

// write puts data at off in the current bytes; the caller has checked
// that the file may grow that far.
func (n *node) write(data []byte, off int) {
	end := off + len(data)
	if end > len(n.cur) {
		n.resize(end)
	}
	copy(n.cur[off:], data)
	n.mtime = time.Now()
	// Only blocks below synced need marking: the rest is copied anyway.
	for b := off / blockSize; b*blockSize < min(end, n.synced); b++ {
		if n.dirty == nil {
			n.dirty = map[int]bool{}
		}
		n.dirty[b] = true
	}
}

// sync makes the current bytes durable.
func (n *node) sync() {
	n.durable = setLen(n.durable, len(n.cur))
	for b := range n.dirty {
		if lo := b * blockSize; lo < len(n.cur) {
			copy(n.durable[lo:], n.cur[lo:min(lo+blockSize, len(n.cur))])
		}
	}
	copy(n.durable[n.synced:], n.cur[n.synced:])
	n.synced, n.dirty = len(n.cur), nil
}

// setLen returns b cut or zero-extended to n bytes. Zeroing matters: a
// shrunk slice keeps its old bytes beyond its length.
func setLen(b []byte, n int) []byte {
	if n <= len(b) {
		return b[:n]
	}
	return append(b, make([]byte, n-len(b))...)
}

func (i *inode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	defer i.unlock()
	// Plenty of room, as memory is: a test of a full disk wants a small
	// tmpfs instead.
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, 255
	out.Blocks, out.Bfree, out.Bavail = 1<<30, 1<<30, 1<<30
	out.Files, out.Ffree = 1<<30, 1<<30
	return 0
}

// add links a new node under i as name; i must be locked.
func (i *inode) add(ctx context.Context, name string, dir bool, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if _, ok := i.n.kids[name]; ok {
		return nil, syscall.EEXIST
	}
	c := i.fsys.newNode(dir, mode)
	i.n.kids[name] = c
	i.n.mtime = c.mtime
	i.attr(c, &out.Attr)
	return i.child(ctx, c), 0
}

func (i *inode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	if e := i.lock(); e != 0 {
		return nil, nil, 0, e
	}
	defer i.unlock()
	// No file handle: reads and writes go to the node, which is all the
	// state a file has here.
	ch, e := i.add(ctx, name, false, mode, out)
	return ch, nil, 0, e
}

func (i *inode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if e := i.lock(); e != 0 {
		return nil, e
	}
	defer i.unlock()
	return i.add(ctx, name, true, mode, out)
}

func (i *inode) Unlink(ctx context.Context, name string) syscall.Errno {
	return i.remove(name, false)
}

func (i *inode) Rmdir(ctx context.Context, name string) syscall.Errno {
	return i.remove(name, true)
}

func (i *inode) remove(name string, dir bool) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	defer i.unlock()
	c, ok := i.n.kids[name]
	switch {
	case !ok:
		return syscall.ENOENT
	case dir && !c.dir:
		return syscall.ENOTDIR
	case !dir && c.dir:
		return syscall.EISDIR
	case dir && len(c.kids) > 0:
		return syscall.ENOTEMPTY
	}
	// A process that has the file open keeps writing to the node, which
	// no snapshot reaches any more.
	delete(i.n.kids, name)
	i.n.mtime = time.Now()
	return 0
}

func (i *inode) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	defer i.unlock()
	to := newParent.(*inode).n
	c, ok := i.n.kids[name]
	if !ok {
		return syscall.ENOENT
	}
	old, exists := to.kids[newName]
	switch {
	case flags&unix.RENAME_EXCHANGE != 0:
		if !exists {
			return syscall.ENOENT
		}
		i.n.kids[name], to.kids[newName] = old, c
		return 0
	case flags&^unix.RENAME_NOREPLACE != 0:
		return syscall.EINVAL // RENAME_WHITEOUT: for overlay file systems
	case exists && flags&unix.RENAME_NOREPLACE != 0:
		return syscall.EEXIST
	case exists && c.dir && !old.dir:
		return syscall.ENOTDIR
	case exists && !c.dir && old.dir:
		return syscall.EISDIR
	case exists && old.dir && len(old.kids) > 0:
		return syscall.ENOTEMPTY
	}
	// The kernel has checked that a directory is not moved below itself.
	delete(i.n.kids, name)
	to.kids[newName] = c
	i.n.mtime, to.mtime = time.Now(), time.Now()
	return 0
}

func (i *inode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if e := i.lock(); e != 0 {
		return nil, 0, e
	}
	i.unlock()
	// No FOPEN_DIRECT_IO, so reads go through the page cache and the
	// file can be mapped; no FOPEN_KEEP_CACHE, so each open starts from
	// what we hold.
	return nil, 0, 0
}

func (i *inode) Read(ctx context.Context, f gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if e := i.lock(); e != 0 {
		return nil, e
	}
	defer i.unlock()
	if off >= int64(len(i.n.cur)) {
		return fuse.ReadResultData(nil), 0
	}
	// Copied under the lock: cur may change as soon as it is released.
	n := copy(dest, i.n.cur[off:])
	return fuse.ReadResultData(dest[:n]), 0
}

func (i *inode) Write(ctx context.Context, f gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if e := i.lock(); e != 0 {
		return 0, e
	}
	defer i.unlock()
	if off < 0 || off+int64(len(data)) > MaxFileSize {
		return 0, syscall.EFBIG
	}
	i.n.write(data, int(off))
	return uint32(len(data)), 0
}

// Flush (each close) has nothing to write back, but with the power off it
// fails like everything else.
func (i *inode) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	i.unlock()
	return 0
}

// Fsync answers fsync and fdatasync of files and directories alike. It
// must never answer ENOSYS: the kernel would take that as "syncing is not
// needed here" and stop asking.
func (i *inode) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	defer i.unlock()
	if i.fsys.syncErr != 0 {
		return i.fsys.syncErr
	}
	if !i.n.dir { // a directory's changes are durable already
		i.n.sync()
	}
	i.fsys.syncs++
	return 0
}

// Allocate answers fallocate in modes 0 and FALLOC_FL_KEEP_SIZE, which
// only reserve space (nothing to reserve in memory) and, in mode 0, extend
// the file with zeros. Other modes punch, zero or shift ranges and get
// EOPNOTSUPP, which callers of fallocate must expect from any file system.
func (i *inode) Allocate(ctx context.Context, f gofs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	if e := i.lock(); e != 0 {
		return e
	}
	defer i.unlock()
	if mode&^unix.FALLOC_FL_KEEP_SIZE != 0 {
		return syscall.EOPNOTSUPP
	}
	if off+size > MaxFileSize {
		return syscall.EFBIG
	}
	if mode == 0 && off+size > uint64(len(i.n.cur)) {
		i.n.resize(int(off + size))
	}
	return 0
}
