package boltfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"strings"
	"testing"
)

// fakeFile is two meta pages of pageSize bytes: transaction ids 1 and 2,
// pages up to pgid in use.
func fakeFile(pageSize int, pgid uint64) []byte {
	raw := make([]byte, 2*pageSize)
	for i := range 2 {
		m := raw[i*pageSize+pageHeaderSize:]
		binary.LittleEndian.PutUint32(m, magic)
		binary.LittleEndian.PutUint32(m[8:], uint32(pageSize))
		binary.LittleEndian.PutUint64(m[40:], pgid)
		binary.LittleEndian.PutUint64(m[48:], uint64(i+1))
		h := fnv.New64a()
		h.Write(m[:checksumAt])
		binary.LittleEndian.PutUint64(m[checksumAt:], h.Sum64())
	}
	return raw
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
		says   string // "" for sound
	}{
		{"sound", func(b []byte) []byte { return b }, ""},
		{"meta 0", func(b []byte) []byte { b[pageHeaderSize+20] ^= 1; return b }, "meta page 0 of f is damaged"},
		{"meta 1", func(b []byte) []byte { b[16384+pageHeaderSize+20] ^= 1; return b }, "meta page 1 of f is damaged"},
		{"cut short", func(b []byte) []byte { return b[:16384+100] }, "f is cut short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.damage(append(fakeFile(16384, 2), make([]byte, 0)...))
			problems, err := Check(bytes.NewReader(raw), int64(len(raw)), "f")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.says == "" && len(problems) > 0:
				t.Errorf("problems in a sound file: %q", problems)
			case tc.says != "" && (len(problems) == 0 || !strings.Contains(problems[0], tc.says)):
				t.Errorf("problems %q, want %q", problems, tc.says)
			}
		})
	}
	if _, err := Check(strings.NewReader(strings.Repeat("not a database\n", 10000)), 150000, "f"); !errors.Is(err, ErrNotBolt) {
		t.Errorf("text file: %v, want ErrNotBolt", err)
	}
}

// FuzzCheck: any file is read without a panic.
func FuzzCheck(f *testing.F) {
	f.Add(fakeFile(4096, 3))
	f.Add(fakeFile(16384, 2)[:100])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		Check(bytes.NewReader(raw), int64(len(raw)), "f")
	})
}
