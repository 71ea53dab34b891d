package packing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
)

// lien is a lien record as the ledger stores it.
const lien = `{"id":7,"job_id":"job-7","machine":"hpc1","project":"chem.lab1","account":"chem","user":"amy","amount":"120","holds":[{"allocation":1,"amount":"120"}],"charged":"0","created":"2026-11-26T19:20:43.633996Z","expires":"2026-11-26T19:31:43.633996Z","state":"active"}`

// TestDictionaryUnchanged: every value packed with dictionary1.txt is
// unpacked with it for the life of its bank; the file must never change
// (doc.go says what to do for a better one).
func TestDictionaryUnchanged(t *testing.T) {
	const want = "d207c1425ec2912f1cf06c60d456e1b2d83e88a51c9428473dbfc3a7a3f8fe6a"
	if got := sha256.Sum256(dictionary1); hex.EncodeToString(got[:]) != want {
		t.Fatalf("dictionary1.txt has SHA-256 %x, want %s: banks packed with it would no longer unpack", got, want)
	}
}

// TestUnpacksWhatWasPacked: a value packed by this ingot when packing came
// in still unpacks to the same bytes, whatever zstd library version packs
// today.
func TestUnpacksWhatWasPacked(t *testing.T) {
	stored, _ := hex.DecodeString("0128b52ffd4100010600b501008401373732303a34332e3633333939363331616374697665227d090080004bc91830c94a66c0ade40393040cf550a0f750747e38082b")
	got, err := Unpack(stored)
	if err != nil || string(got) != lien {
		t.Fatalf("Unpack: %q, %v; want the lien", got, err)
	}
}

func TestPack(t *testing.T) {
	for _, v := range []string{lien, `{}`, "x", `{"a":"` + string(bytes.Repeat([]byte("z"), 100000)) + `"}`} {
		p := Pack([]byte("prefix"), []byte(v))
		if !bytes.HasPrefix(p, []byte("prefix")) || !Packed(p[6:]) {
			t.Fatalf("Pack did not append a packed value: %q", p)
		}
		got, err := Unpack(p[6:])
		if err != nil || string(got) != v {
			t.Fatalf("Unpack(Pack(%.40q)) = %.40q, %v", v, got, err)
		}
	}
	// The dictionary is what packs a small record: a lien takes about a
	// quarter of its JSON.
	if p := Pack(nil, []byte(lien)); len(p) > len(lien)/3 {
		t.Errorf("a lien of %d bytes packs to %d", len(lien), len(p))
	}
	if p := Pack(nil, nil); len(p) != 0 {
		t.Errorf("an empty value packs to %q", p)
	}
}

// TestNotPacked: values stored before packing (JSON, or nothing) come back
// as they are.
func TestNotPacked(t *testing.T) {
	for _, v := range []string{"", lien, `"text"`, `[1]`} {
		got, err := Unpack([]byte(v))
		if err != nil || string(got) != v {
			t.Errorf("Unpack(%q) = %q, %v", v, got, err)
		}
	}
}

// TestDamaged: a packed value whose frame is cut short or damaged is an
// error, not a panic or a value.
func TestDamaged(t *testing.T) {
	p := Pack(nil, []byte(lien))
	for _, damaged := range [][]byte{p[:1], p[:len(p)/2], append([]byte{zstd1}, "not zstd"...)} {
		if v, err := Unpack(damaged); !errors.Is(err, ErrDamaged) {
			t.Errorf("Unpack(%x) = %q, %v; want ErrDamaged", damaged, v, err)
		}
	}
}

// FuzzUnpack: any stored bytes unpack or give ErrDamaged; what unpacks
// packs and unpacks to itself.
func FuzzUnpack(f *testing.F) {
	f.Add(Pack(nil, []byte(lien)))
	f.Add([]byte(lien))
	f.Add([]byte{zstd1})
	f.Add([]byte{zstd1, 0x28, 0xb5, 0x2f, 0xfd})
	f.Fuzz(func(t *testing.T, stored []byte) {
		v, err := Unpack(stored)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Unpack: %v, not ErrDamaged", err)
			}
			return
		}
		again, err := Unpack(Pack(nil, v))
		if err != nil || !bytes.Equal(again, v) {
			t.Fatalf("a value that unpacked does not round-trip: %v", err)
		}
	})
}
