package api

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
)

// CheckBody reads a request body strictly, for the type v points to, before
// it is decoded, so that what the signer of a body meant and what the bank
// applies cannot differ (DESIGN section 6). It refuses, each with a code of
// its own: invalid UTF-8, or a \u escape of half a UTF-16 surrogate pair
// without its other half (CodeInvalidUTF8), either of which encoding/json
// would replace silently with U+FFFD; an object key that appears twice
// (CodeDuplicateKey), of which encoding/json would keep the last; a key
// spelled otherwise than the wire format (CodeKeySpelling), which
// encoding/json would match regardless of case; a string that would not
// print as itself (CodeControlCharacter: a control or format character, or
// a line separator, as ledger.CheckText says), which an operator's
// terminal would obey or a reader would see otherwise than it is; and a
// decimal that is not a JSON string in the bank's grammar (CodeInvalid, see
// checkDecimal). What else is wrong with the body the decoder says after
// (CodeBadJSON).
func CheckBody(body []byte, v any) error {
	if !utf8.Valid(body) {
		return Errorf(CodeInvalidUTF8, "request body: not valid UTF-8")
	}
	if at, ok := loneSurrogate(body); ok {
		return Errorf(CodeInvalidUTF8, "request body: the escape %s at byte %d is half of a UTF-16 surrogate pair without its other half, which is not a character", body[at:at+6], at)
	}
	if !json.Valid(body) {
		return nil // malformed JSON: the decoder's error says where
	}
	r := strictReader{b: body}
	return r.value(strictTypeOf(reflect.TypeOf(v)), "the body")
}

// loneSurrogate finds a \uXXXX escape of a UTF-16 surrogate (U+D800 to
// U+DFFF) that is not a high half followed at once by an escaped low half,
// and returns its offset. encoding/json decodes such an escape as U+FFFD,
// a character the signer did not send. In JSON a backslash stands only in
// a string, where it begins an escape, so a scan of the whole body finds
// every escape; a malformed body, whichever escapes it holds, is refused
// anyway.
func loneSurrogate(body []byte) (int, bool) {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		r, ok := escapedRune(body, i)
		switch {
		case !ok: // another escape: \\ or \" is two bytes, of which the second begins nothing
			i++
		case r >= 0xd800 && r < 0xdc00: // a high half: the low half must follow
			if lo, ok := escapedRune(body, i+6); ok && lo >= 0xdc00 && lo < 0xe000 {
				i += 11 // past the pair
				continue
			}
			return i, true
		case r >= 0xdc00 && r < 0xe000: // a low half without a high one
			return i, true
		}
	}
	return 0, false
}

// escapedRune is the code unit of the \uXXXX escape at body[i:], if one
// is there.
func escapedRune(body []byte, i int) (rune, bool) {
	if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
	return rune(n), err == nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// A strictReader walks a body that json.Valid has passed, byte by byte,
// beside the type it is to be decoded into. It is the request path's one
// reading of the body before encoding/json decodes it, so it allocates
// only for what it must look at (strings, the keys of an object) and asks
// the reflection of a type once (strictTypeOf).
type strictReader struct {
	b []byte
	i int
}

// value reads one value of type t (nil: any); where names it in errors.
func (r *strictReader) value(t *strictType, where string) error {
	r.space()
	if t != nil && t.decimal {
		return r.decimal(where)
	}
	switch r.b[r.i] {
	case '"':
		s, err := r.string()
		if err != nil {
			return err
		}
		return checkString(s, where)
	case '{':
		return r.object(t, where)
	case '[':
		var et *strictType
		if t != nil {
			et = t.elem
		}
		r.i++
		for r.more(']') {
			if err := r.value(et, where); err != nil {
				return err
			}
		}
		return nil
	}
	r.literal()
	return nil // a number, a boolean, null
}

// smallObject is how many keys an object's duplicate check compares one by
// one before it keeps them in a map.
const smallObject = 16

// object reads an object, refusing a key twice or in another case than
// the field it would fill.
func (r *strictReader) object(t *strictType, where string) error {
	var seenFew [smallObject]string
	seen, seenMany := seenFew[:0], map[string]bool(nil)
	r.i++
	for r.more('}') {
		key, err := r.string()
		if err != nil {
			return err
		}
		if ledger.CheckText("a key", key) != nil {
			return checkString(key, "a key of "+where)
		}
		if seenMany[key] || slices.Contains(seen, key) {
			return Errorf(CodeDuplicateKey, "request body: key %q appears twice in %s", key, where)
		}
		if len(seen) < smallObject {
			seen = append(seen, key)
		} else {
			if seenMany == nil {
				seenMany = make(map[string]bool)
			}
			seenMany[key] = true
		}
		var ft *strictType
		switch {
		case t == nil:
		case t.fields != nil:
			f, ok := t.fields[key]
			if !ok {
				for name := range t.fields {
					if strings.EqualFold(name, key) {
						return Errorf(CodeKeySpelling, "request body: key %q in %s: the wire format spells it %q", key, where, name)
					}
				}
			}
			ft = f
		default:
			ft = t.values // a map's; nil for another type, which the decoder refuses
		}
		r.space()
		r.i++ // the colon
		if err := r.value(ft, key); err != nil {
			return err
		}
	}
	return nil
}

// more passes white space and the comma after a member of an object or a
// list, and says whether another member follows; if not, it passes the
// closing delimiter, close.
func (r *strictReader) more(close byte) bool {
	r.space()
	if r.b[r.i] == ',' {
		r.i++
		r.space()
	}
	if r.b[r.i] == close {
		r.i++
		return false
	}
	return true
}

// string reads a string. One without escapes is its bytes (the body is
// valid UTF-8); encoding/json reads the others, so that a key is compared
// and a value checked as the decoder will see it.
func (r *strictReader) string() (string, error) {
	start := r.i
	escaped := false
	for r.i++; r.b[r.i] != '"'; r.i++ {
		if r.b[r.i] == '\\' {
			escaped = true
			r.i++
		}
	}
	r.i++
	if !escaped {
		return string(r.b[start+1 : r.i-1]), nil
	}
	var s string
	if err := json.Unmarshal(r.b[start:r.i], &s); err != nil {
		return "", Errorf(CodeBadJSON, "request body: the string at byte %d: %v", start, err) // not for a valid body
	}
	return s, nil
}

// literal skips a number, true, false or null.
func (r *strictReader) literal() string {
	start := r.i
	for r.i < len(r.b) && !strings.ContainsRune(",]} \t\r\n", rune(r.b[r.i])) {
		r.i++
	}
	return string(r.b[start:r.i])
}

func (r *strictReader) space() {
	for r.i < len(r.b) && (r.b[r.i] == ' ' || r.b[r.i] == '\t' || r.b[r.i] == '\r' || r.b[r.i] == '\n') {
		r.i++
	}
}

// decimal reads the value of a decimal field: see checkDecimal.
func (r *strictReader) decimal(where string) error {
	switch c := r.b[r.i]; {
	case c == '"':
		s, err := r.string()
		if err != nil {
			return err
		}
		return checkDecimal(s, where)
	case c == 'n': // null
		r.literal()
		return nil
	case c == '-' || c >= '0' && c <= '9': // digits, signs, points and exponents only: safe to quote bare
		n := r.literal()
		if len(n) > 64 {
			n = n[:64] + "…"
		}
		return Errorf(CodeInvalid, "request body: %s is the JSON number %s: %s", where, n, decimalHow)
	}
	return Errorf(CodeInvalid, "request body: %s is not a JSON string: %s", where, decimalHow)
}

// checkString refuses a string that would not print as itself
// (ledger.CheckText: the bank's one rule for names and descriptions, which
// the command line applies too). Every string of a body is held to it,
// keys and all: none has a use for such a character.
func checkString(s, where string) error {
	if err := ledger.CheckText(where, s); err != nil {
		return Errorf(CodeControlCharacter, "request body: %v", err)
	}
	return nil
}

var decimalType = reflect.TypeFor[decimal.Decimal]()

// checkDecimal refuses a value of a decimal field (an amount, a credit
// limit, a value of an HFS policy) that is not a JSON string in the bank's
// one grammar of decimals (ledger.ParseDecimal), which the command line and
// the Gold listener read amounts with: shopspring/decimal's UnmarshalJSON,
// which the field would otherwise be decoded with, takes "1e3", "+1", ".5"
// and bare JSON numbers, which the other interfaces refuse. A JSON number
// is refused too, even a plain one, so that a client never has its amounts
// pass through a float (strictReader.decimal); null leaves the field
// unset, as encoding/json does. Whether the number suits its field
// (positive, within the bank's precision, below its maximum) the bank says
// after, as it does for every interface.
func checkDecimal(s, where string) error {
	if _, err := ledger.ParseDecimal(where, s); err != nil {
		return Errorf(CodeInvalid, "request body: %v", err)
	}
	return nil
}

// decimalHow says how to write a decimal, in the refusal of another JSON
// value.
const decimalHow = `write a decimal as a JSON string of digits, optionally a point and more digits, like "100" or "12.50"`

// strictType is what strictReader needs of a type a value decodes into;
// nil stands for any value (a type that decodes itself, an interface, a
// string or a number, which a value of the wrong kind fails to decode
// into after).
type strictType struct {
	decimal bool
	// fields are a struct's fields by their JSON names, as encoding/json
	// names them (embedded structs' fields promoted).
	fields map[string]*strictType
	// values are a map's values.
	values *strictType
	// elem is the element of a slice or an array.
	elem *strictType
}

var (
	strictTypes sync.Map   // reflect.Type -> *strictType, for a type every part of which is made
	strictMake  sync.Mutex // held while a type is made, so that a recursive one is made once
)

// strictTypeOf is the strictType of t, made once.
func strictTypeOf(t reflect.Type) *strictType {
	if st, ok := strictTypes.Load(t); ok {
		return st.(*strictType)
	}
	strictMake.Lock()
	defer strictMake.Unlock()
	made := map[reflect.Type]*strictType{}
	st := makeStrictType(t, made)
	for t, st := range made {
		strictTypes.Store(t, st)
	}
	return st
}

// makeStrictType makes the strictType of t; made holds the types being
// made, so that a type that contains itself refers to itself.
func makeStrictType(t reflect.Type, made map[reflect.Type]*strictType) *strictType {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if st, ok := strictTypes.Load(t); ok {
		return st.(*strictType)
	}
	if st, ok := made[t]; ok {
		return st
	}
	if t == decimalType {
		return &strictType{decimal: true}
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil // read without what its fields would be: a time, raw JSON
	}
	st := &strictType{}
	made[t] = st
	switch t.Kind() {
	case reflect.Struct:
		st.fields = map[string]*strictType{}
		addFields(st.fields, t, made)
	case reflect.Map:
		st.values = makeStrictType(t.Elem(), made)
	case reflect.Slice, reflect.Array:
		st.elem = makeStrictType(t.Elem(), made)
	default:
		made[t] = nil
		return nil
	}
	return st
}

// addFields adds the fields of struct t to fields by their JSON names.
func addFields(fields map[string]*strictType, t reflect.Type, made map[reflect.Type]*strictType) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				promoted := map[string]*strictType{}
				addFields(promoted, ft, made)
				for n, st := range promoted {
					if _, own := fields[n]; !own {
						fields[n] = st
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = makeStrictType(f.Type, made)
	}
}
