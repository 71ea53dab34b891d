package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// CheckBody reads a request body strictly, for the type v points to, before
// it is decoded, so that what the signer of a body meant and what the bank
// applies cannot differ (DESIGN section 6). It refuses, each with a code of
// its own: invalid UTF-8 (CodeInvalidUTF8), which encoding/json would
// replace silently; an object key that appears twice (CodeDuplicateKey),
// of which encoding/json would keep the last; a key spelled otherwise than
// the wire format (CodeKeySpelling), which encoding/json would match
// regardless of case; and a control character in any string
// (CodeControlCharacter), which would be printed raw in an operator's
// terminal. What else is wrong with the body the decoder says after
// (CodeBadJSON).
func CheckBody(body []byte, v any) error {
	if !utf8.Valid(body) {
		return Errorf(CodeInvalidUTF8, "request body: not valid UTF-8")
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

// checkString refuses control characters (C0, DEL, C1).
func checkString(s, where string) error {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return Errorf(CodeControlCharacter, "request body: %s holds the control character U+%04X", where, r)
		}
	}
	return nil
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
