package api

import (
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query parameters of the GETs are the fields of a query type, each tagged
// `query:"name"` or `query:"name,required"`. A field is a string, bool
// ("true" or "false"), int, float64, time.Time (RFC 3339), time.Duration
// (Go's form, e.g. 168h) or []string (the parameter repeated). A zero field
// is left out of the query. EncodeQuery and DecodeQuery are the client's
// and the server's halves of the same rules.

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
)

// queryField is one tagged field of a query type.
type queryField struct {
	name     string
	required bool
	index    int
}

func queryFields(t reflect.Type) []queryField {
	var out []queryField
	for i := range t.NumField() {
		tag, ok := t.Field(i).Tag.Lookup("query")
		if !ok {
			continue
		}
		name, opt, _ := strings.Cut(tag, ",")
		out = append(out, queryField{name: name, required: opt == "required", index: i})
	}
	return out
}

// EncodeQuery returns the parameters of q, a query type (or a pointer to
// one).
func EncodeQuery(q any) url.Values {
	v := reflect.Indirect(reflect.ValueOf(q))
	out := url.Values{}
	for _, f := range queryFields(v.Type()) {
		field := v.Field(f.index)
		if field.IsZero() {
			continue
		}
		switch {
		case field.Type() == timeType:
			out.Set(f.name, field.Interface().(time.Time).UTC().Format(time.RFC3339Nano))
		case field.Type() == durationType:
			out.Set(f.name, field.Interface().(time.Duration).String())
		case field.Kind() == reflect.Slice:
			out[f.name] = slices.Clone(field.Interface().([]string))
		case field.Kind() == reflect.Float64:
			out.Set(f.name, strconv.FormatFloat(field.Float(), 'g', -1, 64))
		default:
			out.Set(f.name, fmt.Sprint(field.Interface()))
		}
	}
	return out
}

// DecodeQuery sets the fields of *q from the parameters strictly: a name q
// does not have, a repeated parameter that is not a list, an empty value,
// a missing required one or a value that does not parse is refused with
// an Error (invalid) naming the endpoint's path.
func DecodeQuery(path string, values url.Values, q any) error {
	v := reflect.ValueOf(q).Elem()
	fields := queryFields(v.Type())
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	for name := range values {
		if !slices.Contains(names, name) {
			return Errorf(CodeInvalid, "unknown query parameter %q; %s takes %s", name, path, paramList(names))
		}
	}
	for _, f := range fields {
		got := values[f.name]
		if len(got) == 0 {
			if f.required {
				return Errorf(CodeInvalid, "%s needs the query parameter %s", path, f.name)
			}
			continue
		}
		if slices.Contains(got, "") {
			return Errorf(CodeInvalid, "%s: query parameter %s is empty", path, f.name)
		}
		if err := setParam(v.Field(f.index), got); err != nil {
			return Errorf(CodeInvalid, "%s: query parameter %s: %v", path, f.name, err)
		}
	}
	return nil
}

func paramList(names []string) string {
	if len(names) == 0 {
		return "no parameters"
	}
	return "only " + strings.Join(names, ", ")
}

// setParam sets one field from its values.
func setParam(field reflect.Value, values []string) error {
	if field.Kind() == reflect.Slice {
		field.Set(reflect.ValueOf(slices.Clone(values)))
		return nil
	}
	if len(values) > 1 {
		return fmt.Errorf("given %d times; it takes one value", len(values))
	}
	s := values[0]
	switch {
	case field.Type() == timeType:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("%q is not an RFC 3339 time", s)
		}
		field.Set(reflect.ValueOf(t))
	case field.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 90m or 168h", s)
		}
		field.SetInt(int64(d))
	case field.Kind() == reflect.String:
		field.SetString(s)
	case field.Kind() == reflect.Bool:
		if s != "true" && s != "false" {
			return fmt.Errorf("%q is not true or false", s)
		}
		field.SetBool(s == "true")
	case field.Kind() == reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		field.SetInt(int64(n))
	case field.Kind() == reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%q is not a number", s)
		}
		field.SetFloat(x)
	default:
		return fmt.Errorf("api: query field of type %s is not supported", field.Type())
	}
	return nil
}
