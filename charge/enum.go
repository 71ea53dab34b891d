package charge

import (
	"fmt"
	"strings"
)

// enum is a small enumeration whose value i (from 1) is named names[i-1];
// the zero value means "not set".
type enum interface{ ~uint8 }

func enumName[T enum](names []string, v T) string {
	if v == 0 || int(v) > len(names) {
		return ""
	}
	return names[v-1]
}

// parseEnum reads a name case-insensitively, ignoring surrounding spaces.
func parseEnum[T enum](names []string, s string, unknown error) (T, error) {
	for i, n := range names {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return T(i + 1), nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want one of %s)", unknown, s, strings.Join(names, ", "))
}

// marshalEnum writes the name; the zero value is written as "" so that an
// unset field survives a round trip. A value with no name is refused.
func marshalEnum[T enum](names []string, v T, unknown error) ([]byte, error) {
	name := enumName(names, v)
	if v != 0 && name == "" {
		return nil, fmt.Errorf("%w: %d", unknown, v)
	}
	return []byte(name), nil
}

// unmarshalEnum reads what marshalEnum writes.
func unmarshalEnum[T enum](names []string, text []byte, unknown error) (T, error) {
	if len(text) == 0 {
		return 0, nil
	}
	return parseEnum[T](names, string(text), unknown)
}
