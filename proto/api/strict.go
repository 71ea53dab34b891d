package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"io"
	"reflect"
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
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := checkValue(dec, reflect.TypeOf(v), "the body")
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil // malformed JSON: the decoder's error says where
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

// checkValue reads one value of type t (nil: any) from dec; where names it
// in errors.
func checkValue(dec *json.Decoder, t reflect.Type, where string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if t == decimalType {
		return checkDecimal(tok, where)
	}
	if s, ok := tok.(string); ok {
		return checkString(s, where)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil // a number, a boolean, null
	}
	// A type that decodes itself (a decimal, a time, raw JSON) is read
	// without what its fields would be.
	if t != nil && (t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)) {
		t = nil
	}
	switch delim {
	case '{':
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			if err := checkString(key, "a key of "+where); err != nil {
				return err
			}
			if seen[key] {
				return Errorf(CodeDuplicateKey, "request body: key %q appears twice in %s", key, where)
			}
			seen[key] = true
			var ft reflect.Type
			switch {
			case fields != nil:
				f, ok := fields[key]
				if !ok {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return Errorf(CodeKeySpelling, "request body: key %q in %s: the wire format spells it %q", key, where, name)
						}
					}
				}
				ft = f
			case t != nil && t.Kind() == reflect.Map:
				ft = t.Elem()
			}
			if err := checkValue(dec, ft, key); err != nil {
				return err
			}
		}
	case '[':
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for dec.More() {
			if err := checkValue(dec, et, where); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF { // the closing delimiter
		return err
	}
	return nil
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
// pass through a float; null leaves the field unset, as encoding/json
// does. Whether the number suits its field (positive, within the bank's
// precision, below its maximum) the bank says after, as it does for every
// interface.
func checkDecimal(tok json.Token, where string) error {
	const how = `write a decimal as a JSON string of digits, optionally a point and more digits, like "100" or "12.50"`
	switch v := tok.(type) {
	case nil:
		return nil
	case string:
		if _, err := ledger.ParseDecimal(where, v); err != nil {
			return Errorf(CodeInvalid, "request body: %v", err)
		}
		return nil
	case json.Number: // digits, signs, points and exponents only: safe to quote bare
		n := string(v)
		if len(n) > 64 {
			n = n[:64] + "…"
		}
		return Errorf(CodeInvalid, "request body: %s is the JSON number %s: %s", where, n, how)
	}
	return Errorf(CodeInvalid, "request body: %s is not a JSON string: %s", where, how)
}

// jsonFields are the JSON names of a struct's fields, as encoding/json
// names them (embedded structs' fields promoted), with their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, typ := range jsonFields(ft) {
					if _, own := fields[n]; !own {
						fields[n] = typ
					}
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	fieldCache.Store(t, fields)
	return fields
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type
