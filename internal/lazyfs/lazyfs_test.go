package lazyfs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// The tests touch the mount in two ways. Plain system calls (open,
// pwrite, fsync, ftruncate, rename) they make from the test process
// itself, which also serves the file system: such a call blocks its
// thread in the kernel, where the Go runtime need not stop it, while other
// goroutines answer it, as in go-fuse's own tests. Anything that maps a
// file (the mmap test, bbolt) runs in a helper process, this test binary
// run again with helperEnv set, because a page fault on the mount in the
// serving process can deadlock against the garbage collector (doc.go).

const helperEnv = "LAZYFS_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		if err := helper(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// skipOrFail skips the test, or fails it under INGOT_E2E=1, where the
// machine is meant to have everything the test needs.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("INGOT_E2E") == "1" {
		t.Fatalf(format+" (INGOT_E2E=1, so this fails rather than skips)", args...)
	}
	t.Skipf(format, args...)
}

// mount mounts a lazy file system on st at dir and unmounts it when the
// test ends.
func mount(t *testing.T, dir string, st *State) *FS {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		skipOrFail(t, "no FUSE device: %v", err)
	}
	f, err := Mount(dir, st)
	if errors.Is(err, fs.ErrPermission) {
		skipOrFail(t, "cannot mount FUSE here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// reboot cuts the power and mounts a fresh file system, at the same
// place, on what the disk held.
func reboot(t *testing.T, f *FS) (*FS, *State) {
	t.Helper()
	st := f.PowerCut()
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	return mount(t, f.Dir(), st), st
}

// run runs a helper process to its end and returns its standard output.
func run(t *testing.T, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := helperCmd(t, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %v: %v: %s", args, err, stderr.Bytes())
	}
	return out
}

func helperCmd(t *testing.T, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	return cmd
}

func helper(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("helper: want a command and a path, have %q", args)
	}
	switch cmd, path := args[0], args[1]; cmd {
	case "mmap":
		return mmapRead(path)
	case "hold":
		return hold(path)
	case "bolt-write":
		n, err := strconv.Atoi(args[2])
		if err != nil {
			return err
		}
		return boltWrite(path, n)
	case "bolt-check":
		return boltCheck(path)
	default:
		return fmt.Errorf("helper: unknown command %q", cmd)
	}
}

// mmapRead writes a file's content, read through a read-only shared
// mapping as bbolt reads its database, to standard output.
func mmapRead(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap %s: %w", path, err)
	}
	defer syscall.Munmap(m)
	_, err = os.Stdout.Write(m)
	return err
}

// hold opens a file, says so and waits to be killed.
func hold(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Println("holding")
	time.Sleep(time.Minute)
	return fmt.Errorf("hold: not killed")
}

// boltWrite commits n keys to a bbolt database, one Update each, and
// prints each key once its Update has returned: committed and synced.
func boltWrite(path string, n int) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	for i := range n {
		key := fmt.Sprintf("key-%03d", i)
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("keys"))
			if err != nil {
				return err
			}
			return b.Put([]byte(key), []byte("value-"+key))
		})
		if err != nil {
			return fmt.Errorf("update %s: %w", key, err)
		}
		fmt.Println(key)
	}
	return db.Close()
}

// boltCheck runs bbolt's consistency check on a database and prints each
// key and value.
func boltCheck(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("tx.Check: %w", errors.Join(errs...))
		}
		b := tx.Bucket([]byte("keys"))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			_, err := fmt.Printf("%s %s\n", k, v)
			return err
		})
	})
}

var syncs = []struct {
	name string
	sync func(*os.File) error
}{
	{"fsync", (*os.File).Sync},
	{"fdatasync", func(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }},
}

// TestUnsyncedWriteLost: what was written after the last sync, the bytes
// that overwrote synced ones and those that extended the file, is gone
// after a power cut, and the length is the synced one.
func TestUnsyncedWriteLost(t *testing.T) {
	for _, s := range syncs {
		t.Run(s.name, func(t *testing.T) {
			f := mount(t, t.TempDir(), nil)
			path := filepath.Join(f.Dir(), "file")
			a := bytes.Repeat([]byte("A"), 5000) // more than a page
			b := bytes.Repeat([]byte("B"), 3000)
			file, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			if _, err := file.WriteAt(a, 0); err != nil {
				t.Fatal(err)
			}
			if err := s.sync(file); err != nil {
				t.Fatal(err)
			}
			if _, err := file.WriteAt(b, 4000); err != nil {
				t.Fatal(err)
			}
			want := append(bytes.Clone(a[:4000]), b...)
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("before the cut: read %d bytes (%v), want %d: A up to 4000, then B", len(got), err, len(want))
			}
			if n := f.Syncs(); n != 1 {
				t.Errorf("Syncs() = %d, want 1", n)
			}

			st := f.PowerCut()
			if _, err := os.ReadFile(path); !errors.Is(err, syscall.EIO) {
				t.Errorf("reading after the cut: %v, want EIO", err)
			}
			if err := file.Close(); !errors.Is(err, syscall.EIO) {
				t.Errorf("closing after the cut: %v, want EIO", err)
			}
			if err := f.Unmount(); err != nil {
				t.Fatal(err)
			}
			mount(t, f.Dir(), st)
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, a) {
				t.Errorf("after the reboot: %d bytes, %q...; want A's %d", len(got), got[:min(len(got), 8)], len(a))
			}
		})
	}
}

// TestNeverSyncedComesBackEmpty: names are durable at once, data only
// when synced, so a file never synced comes back present and empty.
func TestNeverSyncedComesBackEmpty(t *testing.T) {
	write := func(t *testing.T, path, data string, sync bool) {
		t.Helper()
		file, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		if _, err := file.WriteString(data); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := file.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, dir string)
		want State // after the reboot
	}{
		{
			name: "created",
			do:   func(t *testing.T, dir string) { write(t, filepath.Join(dir, "f"), "lost", false) },
			want: State{Files: map[string]File{"f": {Perm: 0644}}, Dirs: map[string]os.FileMode{}},
		},
		{
			name: "nested",
			do: func(t *testing.T, dir string) {
				if err := os.MkdirAll(filepath.Join(dir, "d/e"), 0o750); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(dir, "d/e/f"), "lost", false)
				write(t, filepath.Join(dir, "d/kept"), "kept", true)
			},
			want: State{
				Files: map[string]File{"d/e/f": {Perm: 0644}, "d/kept": {Data: []byte("kept"), Perm: 0644}},
				Dirs:  map[string]os.FileMode{"d": 0750, "d/e": 0750},
			},
		},
		{
			name: "renamed over a synced file",
			do: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "f"), "old", true)
				write(t, filepath.Join(dir, "f.tmp"), "new", false)
				if err := os.Rename(filepath.Join(dir, "f.tmp"), filepath.Join(dir, "f")); err != nil {
					t.Fatal(err)
				}
			},
			want: State{Files: map[string]File{"f": {Perm: 0644}}, Dirs: map[string]os.FileMode{}},
		},
		{
			// A truncate is a change of data like a write.
			name: "truncated on open, never synced",
			do: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "f"), "synced", true)
				write(t, filepath.Join(dir, "f"), "new", false) // O_TRUNC
			},
			want: State{Files: map[string]File{"f": {Data: []byte("synced"), Perm: 0644}}, Dirs: map[string]os.FileMode{}},
		},
		{
			name: "exchanged with a synced file",
			do: func(t *testing.T, dir string) {
				a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
				write(t, a, "synced", true)
				write(t, b, "lost", false)
				if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
					t.Fatal(err)
				}
			},
			want: State{Files: map[string]File{"a": {Perm: 0644}, "b": {Data: []byte("synced"), Perm: 0644}}, Dirs: map[string]os.FileMode{}},
		},
		{
			name: "removed after a sync",
			do: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "f"), "synced", true)
				if err := os.Remove(filepath.Join(dir, "f")); err != nil {
					t.Fatal(err)
				}
			},
			want: State{Files: map[string]File{}, Dirs: map[string]os.FileMode{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A known umask, so the permission bits are known.
			defer syscall.Umask(syscall.Umask(0o022))
			f := mount(t, t.TempDir(), nil)
			tc.do(t, f.Dir())
			f2, st := reboot(t, f)
			if !reflect.DeepEqual(normal(st), normal(&tc.want)) {
				t.Errorf("after the cut the disk holds\n%+v\nwant\n%+v", *st, tc.want)
			}
			// And the rebooted mount shows it.
			for p, file := range tc.want.Files {
				got, err := os.ReadFile(filepath.Join(f2.Dir(), p))
				if err != nil || !bytes.Equal(got, file.Data) {
					t.Errorf("after the reboot %s holds %q (%v), want %q", p, got, err, file.Data)
				}
			}
		})
	}
}

// normal makes empty and nil content compare equal.
func normal(st *State) *State {
	c := &State{Files: map[string]File{}, Dirs: st.Dirs}
	for p, f := range st.Files {
		if len(f.Data) == 0 {
			f.Data = nil
		}
		c.Files[p] = f
	}
	return c
}

// TestMmapSeesTruncateAndPwrite: another process mapping the file, as
// bbolt maps its database, sees bytes written with pwrite, and zeros
// where ftruncate extended the file; fdatasync makes both durable.
func TestMmapSeesTruncateAndPwrite(t *testing.T) {
	f := mount(t, t.TempDir(), nil)
	path := filepath.Join(f.Dir(), "mapped")
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	const size = 3*4096 + 17
	want := make([]byte, size)
	writes := []struct {
		off  int64
		data string
	}{{100, "hello"}, {4090, "across a page boundary"}, {2 * 4096, "third page"}}
	for _, w := range writes {
		if _, err := syscall.Pwrite(fd, []byte(w.data), w.off); err != nil {
			t.Fatal(err)
		}
		copy(want[w.off:], w.data)
	}
	if err := syscall.Ftruncate(fd, size); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fdatasync(fd); err != nil {
		t.Fatal(err)
	}
	if got := run(t, "mmap", path); !bytes.Equal(got, want) {
		t.Errorf("the mapping shows %d bytes, not the %d written", len(got), len(want))
	}
	if err := syscall.Close(fd); err != nil {
		t.Fatal(err)
	}
	_, st := reboot(t, f)
	if got := st.Files["mapped"].Data; !bytes.Equal(got, want) {
		t.Errorf("after the cut the disk holds %d bytes, not the %d synced", len(got), len(want))
	}
}

// TestFailSyncs: a failing sync reports its error, counts as no sync and
// makes nothing durable.
func TestFailSyncs(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		t.Run(unix.ErrnoName(errno), func(t *testing.T) {
			f := mount(t, t.TempDir(), nil)
			path := filepath.Join(f.Dir(), "file")
			file, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			if _, err := file.WriteString("synced"); err != nil {
				t.Fatal(err)
			}
			if err := file.Sync(); err != nil {
				t.Fatal(err)
			}
			f.FailSyncs(errno)
			if _, err := file.WriteString(" and lost"); err != nil {
				t.Fatal(err)
			}
			for _, s := range syncs {
				if err := s.sync(file); !errors.Is(err, errno) {
					t.Errorf("%s: %v, want %v", s.name, err, errno)
				}
			}
			if n := f.Syncs(); n != 1 {
				t.Errorf("Syncs() = %d, want 1: failed syncs do not count", n)
			}
			if got, _ := os.ReadFile(path); string(got) != "synced and lost" {
				t.Errorf("before the cut reads see %q", got)
			}
			if got := f.PowerCut().Files["file"].Data; string(got) != "synced" {
				t.Errorf("after the cut the disk holds %q, want %q", got, "synced")
			}
		})
	}
}

// TestFallocate: mode 0 extends the file with zeros (the bank's log
// preallocates so), KEEP_SIZE changes nothing seen, the rest are refused;
// the new length is durable only once synced.
func TestFallocate(t *testing.T) {
	f := mount(t, t.TempDir(), nil)
	path := filepath.Join(f.Dir(), "log")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString("head"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		mode     uint32
		off, len int64
		err      error
		size     int64 // after
	}{
		{"mode 0", 0, 0, 3 * 4096, nil, 3 * 4096},
		{"keep size", unix.FALLOC_FL_KEEP_SIZE, 0, 8 * 4096, nil, 3 * 4096},
		{"mode 0 past the end", 0, 4 * 4096, 100, nil, 4*4096 + 100},
		{"punch hole", unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE, 0, 4096, syscall.EOPNOTSUPP, 4*4096 + 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := syscall.Fallocate(int(file.Fd()), tc.mode, tc.off, tc.len)
			if !errors.Is(err, tc.err) {
				t.Errorf("fallocate: %v, want %v", err, tc.err)
			}
			info, err := file.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if info.Size() != tc.size {
				t.Errorf("size %d, want %d", info.Size(), tc.size)
			}
		})
	}
	want := append([]byte("head"), make([]byte, 4*4096+100-4)...)
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Errorf("read %d bytes (%v), want head and zeros to %d", len(got), err, len(want))
	}
	if err := file.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.PowerCut().Files["log"].Data; !bytes.Equal(got, want) {
		t.Errorf("after the cut the disk holds %d bytes, want %d", len(got), len(want))
	}
}

// TestBoltPowerCut: a bbolt database written by another process and cut
// off mid-way (the process killed, then the power) passes bbolt's
// consistency check after the reboot and holds every key whose Update had
// returned.
func TestBoltPowerCut(t *testing.T) {
	const keys = 50
	for _, cutAfter := range []int{1, keys / 2, keys} {
		t.Run(fmt.Sprintf("after %d", cutAfter), func(t *testing.T) {
			f := mount(t, t.TempDir(), nil)
			db := filepath.Join(f.Dir(), "bank.db")
			writer := helperCmd(t, "bolt-write", db, strconv.Itoa(keys))
			var stderr bytes.Buffer
			writer.Stderr = &stderr
			stdout, err := writer.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := writer.Start(); err != nil {
				t.Fatal(err)
			}
			var committed []string
			lines := bufio.NewScanner(stdout)
			for len(committed) < cutAfter && lines.Scan() {
				committed = append(committed, lines.Text())
			}
			writer.Process.Kill() // SIGKILL; it may have finished already
			writer.Wait()
			if len(committed) < cutAfter {
				t.Fatalf("the writer stopped after %d keys: %s", len(committed), stderr.Bytes())
			}
			if n := f.Syncs(); n < len(committed) {
				t.Errorf("%d syncs for %d commits", n, len(committed))
			}

			reboot(t, f)
			present := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(run(t, "bolt-check", db))), "\n") {
				k, v, _ := strings.Cut(line, " ")
				present[k] = v
			}
			for _, k := range committed {
				if v, ok := present[k]; !ok || v != "value-"+k {
					t.Errorf("committed %s is %q after the reboot (present: %t)", k, v, ok)
				}
			}
			if len(present) > keys {
				t.Errorf("%d keys after the reboot, more than the %d written", len(present), keys)
			}
		})
	}
}

// TestUnmountWhileHeld: Unmount detaches at once even while a process
// holds a file, so the machine can reboot at the same place, and it
// returns once that process is gone.
func TestUnmountWhileHeld(t *testing.T) {
	f := mount(t, t.TempDir(), nil)
	path := filepath.Join(f.Dir(), "held")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder := helperCmd(t, "hold", path)
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Wait()
	defer holder.Process.Kill()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("holder: %q, %v", line, err)
	}

	st := f.PowerCut()
	unmounted := make(chan error, 1)
	go func() { unmounted <- f.Unmount() }()
	// The mount point is free as soon as it is detached.
	var f2 *FS
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if f2, err = Mount(f.Dir(), st); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("mounting again while the old mount is held: %v", err)
		}
	}
	defer f2.Unmount()
	if got, err := os.ReadFile(path); err != nil || len(got) != 0 {
		t.Errorf("after the reboot %s holds %q (%v), want it empty", path, got, err)
	}
	select {
	case err := <-unmounted:
		t.Fatalf("Unmount returned (%v) while the file was held: the holder did not hold", err)
	default:
	}
	holder.Process.Kill()
	select {
	case err := <-unmounted:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Unmount has not returned after the holder was killed")
	}
}

// TestStateRoundTrip: a file system mounted on a State and cut at once
// gives back that State, directories and permission bits included.
func TestStateRoundTrip(t *testing.T) {
	in := &State{
		Files: map[string]File{
			"a":         {Data: []byte("top"), Perm: 0600},
			"d/e/empty": {Perm: 0644},
			"d/f":       {Data: bytes.Repeat([]byte{0, 1, 2}, 10000), Perm: 0640},
		},
		Dirs: map[string]os.FileMode{"d": 0700, "d/e": 0755, "empty-dir": 0750},
	}
	f := mount(t, t.TempDir(), in)
	if info, err := os.Stat(filepath.Join(f.Dir(), "d/f")); err != nil || info.Size() != 30000 || info.Mode() != 0640 {
		t.Errorf("d/f: %v, %v", info, err)
	}
	if got := f.PowerCut(); !reflect.DeepEqual(normal(got), normal(in)) {
		t.Errorf("cut at once, the disk holds\n%+v\nwant\n%+v", *got, *in)
	}
}

// TestSyncCopiesWhatChanged: after any mix of writes and truncates, the
// current bytes are what a plain model says, and sync, which copies only
// the blocks written and the tail past the last sync, makes the durable
// bytes equal to them. It needs no FUSE.
func TestSyncCopiesWhatChanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := &node{}
	var want []byte // the model: a fresh slice at every size change
	for step := range 5000 {
		switch op := rng.IntN(10); {
		case op < 6:
			data := make([]byte, rng.IntN(3*blockSize))
			for i := range data {
				data[i] = byte(rng.IntN(255) + 1) // never zero, so a stale byte shows
			}
			off := rng.IntN(6 * blockSize)
			n.write(data, off)
			if end := off + len(data); end > len(want) {
				want = append(bytes.Clone(want), make([]byte, end-len(want))...)
			}
			copy(want[off:], data)
		case op < 9:
			size := rng.IntN(8 * blockSize)
			n.resize(size)
			want = append(make([]byte, 0, size), want[:min(size, len(want))]...)
			want = append(want, make([]byte, size-len(want))...)
		default:
			n.sync()
			if !bytes.Equal(n.durable, want) {
				t.Fatalf("step %d: after a sync the durable bytes differ from the model", step)
			}
		}
		if !bytes.Equal(n.cur, want) {
			t.Fatalf("step %d: the current bytes differ from the model", step)
		}
	}
}
