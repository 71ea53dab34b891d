package packing

import (
	_ "embed"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

//go:embed dictionary1.txt
var dictionary1 []byte

// zstd1 is the first byte of a value packed with zstd and dictionary1.
const zstd1 = 0x01

// MaxUnpacked bounds what a packed value may unpack to: a damaged or
// hostile value cannot make Unpack take more memory than this.
const MaxUnpacked = 64 << 20

var (
	encoder *zstd.Encoder
	decoder *zstd.Decoder
)

func init() {
	var err error
	// No checksum: the audit checks every journal entry against its hash,
	// and a record that unpacks into something else fails to decode or
	// to match the journal.
	encoder, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderDictRaw(1, dictionary1),
		zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true))
	if err != nil {
		panic(fmt.Sprintf("packing: the zstd encoder: %v", err))
	}
	decoder, err = zstd.NewReader(nil, zstd.WithDecoderDictRaw(1, dictionary1), zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxUnpacked))
	if err != nil {
		panic(fmt.Sprintf("packing: the zstd decoder: %v", err))
	}
}

// Pack appends value, packed, to dst. An empty value stays empty.
func Pack(dst, value []byte) []byte {
	if len(value) == 0 {
		return dst
	}
	return encoder.EncodeAll(value, append(dst, zstd1))
}

// Packed says whether a stored value was packed by Pack.
func Packed(stored []byte) bool { return len(stored) > 0 && stored[0] == zstd1 }

// ErrDamaged is returned by Unpack for a packed value that does not
// unpack.
var ErrDamaged = errors.New("packing: the value does not unpack")

// Unpack is the value Pack packed into stored, in memory of its own; a
// value not packed (stored before packing came in) is returned as it is.
func Unpack(stored []byte) ([]byte, error) {
	if !Packed(stored) {
		return stored, nil
	}
	if len(stored) == 1 {
		return nil, fmt.Errorf("%w: no frame after its first byte", ErrDamaged)
	}
	v, err := decoder.DecodeAll(stored[1:], nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	return v, nil
}
