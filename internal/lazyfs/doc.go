// Package lazyfs is a FUSE file system for power-loss tests, in the manner
// of LazyFS: it keeps every file in memory and loses, at a simulated power
// cut, every byte that was written but not yet fsynced. It is test support
// only; the product never imports it.
//
// # The model
//
// Each regular file has two versions of its content. The current bytes
// are what reads (and mmap) see; every write, truncate (O_TRUNC too) and
// fallocate changes only them. The durable bytes are what a disk would hold after
// the power went off; fsync and fdatasync of the file copy the current
// bytes, length included, to the durable ones. fsync and fdatasync are
// the same here: there is no metadata that fdatasync could skip.
//
// The names are not lazy: creating, renaming and removing files and
// directories, and chmod, are durable the moment they return, as if every
// directory were fsynced after each change. So a file created and
// written but never synced comes back after a cut present and empty; a
// file renamed over another without a sync of its data comes back empty
// under the new name, which is the zero-length-file failure that
// applications renaming a temporary file without fsyncing it meet on
// real file systems. What real file systems may lose on top of that (a
// create or rename not followed by an fsync of its directory) this
// package does not model: its point is the data.
//
// PowerCut turns the machine off: from then on every request fails with
// EIO, and it returns the durable State, which Mount takes to "reboot" on
// a fresh mount (Unmount the old one first; it detaches lazily, so a
// process that still holds files there does not stop the reboot).
// FailSyncs makes every later sync fail with a given errno and make
// nothing durable, as a failing disk would; the current bytes stay as
// they are. Syncs counts the syncs that succeeded; syncing a directory
// succeeds and counts, with nothing to make durable.
//
// # Kernel caching
//
// The mount is made so that the file system sees each write as it
// happens and a new mount sees only the State it was given:
//
//   - no writeback cache (go-fuse does not ask for it): each write(2)
//     reaches the file system before it returns, so nothing sits dirty in
//     the kernel where a power cut would not see it;
//   - no direct_io: reads go through the page cache, which is what lets a
//     process mmap a file (bbolt reads its database through a read-only
//     MAP_SHARED mapping), and a write updates the cached pages as it
//     passes, so the mapping sees it;
//   - entry, attribute and negative-lookup timeouts of zero: the kernel
//     asks for sizes and names each time rather than trusting its own;
//   - flock and POSIX locks are left to the kernel, which keeps them for
//     the mount (bbolt's flock works; the locks vanish with the mount,
//     as they would with a reboot).
//
// Data written through a shared writable mapping reaches the file system
// only when the kernel writes the pages back (msync, fsync, munmap).
//
// # Limits
//
// Only directories and regular files: no symbolic or hard links, device
// nodes or extended attributes. Every file belongs to the user who
// mounted the file system and chown is ignored; permission bits are kept
// (in the State too) but not enforced; times are not kept in the State.
// Content lives in memory, a file at most MaxFileSize bytes, twice over
// (current and durable). fallocate supports only modes 0 and
// FALLOC_FL_KEEP_SIZE. After PowerCut, pages the kernel already holds in
// its cache may still be readable through a mapping made before; kill the
// processes using the file system before cutting the power, as a real
// power cut would.
//
// # Processes
//
// Root mounts with mount(2) itself and needs no fusermount; other users
// need fusermount3 or fusermount installed. Where mounting is not
// permitted, Mount's error wraps fs.ErrPermission, so a test can tell
// "not here" from "broken".
//
// The FUSE server runs in the process that called Mount. That process
// should not map files of the mount: a page fault waits for the server,
// and the Go runtime cannot stop a goroutine stuck in a fault for garbage
// collection while it can stop the server's goroutines, so the two can
// wait for each other forever. Plain system calls (open, pwrite, fsync,
// ftruncate) are safe from the serving process, as go-fuse's own tests
// use them; anything that maps a file, bbolt included, belongs in another
// process.
package lazyfs
