package metrics

import "golang.org/x/sys/unix"

// statFilesystem is the space an unprivileged process may still write on
// the file system holding path, and that file system's size, in bytes.
func statFilesystem(path string) (avail, size uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	unit := uint64(st.Bsize)
	if st.Frsize > 0 {
		unit = uint64(st.Frsize)
	}
	return uint64(st.Bavail) * unit, uint64(st.Blocks) * unit, nil
}
