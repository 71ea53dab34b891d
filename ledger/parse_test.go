package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" = refused
	}{
		{"100", "100"}, {"12.50", "12.5"}, {"0.01", "0.01"}, {"1000000000000000", "1000000000000000"},
		{"0", ""}, {"0.00", ""}, {"-1", ""}, {"+1", ""}, {"1e3", ""}, {"1,000", ""}, {" 1", ""}, {"1.", ""},
		{".5", ""}, {"0.001", ""}, {"1000000000000000.01", ""}, {"NaN", ""}, {"", ""}, {"０", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAmount(tc.in, 2)
			if tc.want == "" {
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("ParseAmount(%q) = %s, %v; want ErrInvalid", tc.in, got, err)
				}
				return
			}
			if err != nil || !got.Equal(decimal.RequireFromString(tc.want)) {
				t.Errorf("ParseAmount(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"now", now},
		{"now-2h", now.Add(-2 * time.Hour)},
		{"now+30d", now.Add(30 * 24 * time.Hour)},
		{"now-1w", now.Add(-7 * 24 * time.Hour)},
		{"2026-11-22T05:00:00Z", now},
		{"2026-11-22T06:00:00+01:00", now},
		{"2026-11-22", time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)}, // local midnight in Berlin
		{"2026-11-22 14:30", time.Date(2026, 11, 22, 13, 30, 0, 0, time.UTC)},
		{"2026-07-01T14:30:05", time.Date(2026, 7, 1, 12, 30, 5, 0, time.UTC)}, // summer time
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTime(tc.in, now, berlin)
			if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
				t.Errorf("ParseTime(%q) = %s, %v; want %s UTC", tc.in, got, err, tc.want)
			}
		})
	}
	// Before 1970 is refused: no bank holds anything that old, and year 1
	// (Go's zero time) would read as "not given".
	for _, bad := range []string{"", "yesterday", "now-", "now-2y", "2026-13-01", "2026-11-22 25:00", "now+9999999999d", "now-999999999w",
		"0001-01-01", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "now-100000d"} {
		if got, err := ParseTime(bad, now, berlin); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseTime(%q) = %s, %v; want ErrInvalid", bad, got, err)
		}
	}
	if end, err := ParseEnd("never", now, berlin); err != nil || !end.IsZero() {
		t.Errorf("ParseEnd(never) = %s, %v", end, err)
	}
}

// TestParseDecimal: the bank's one grammar of decimals takes digits,
// optionally a point and more digits, and nothing else; a value it takes
// is read exactly, zero included (what a field allows is its own check).
func TestParseDecimal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" = refused
	}{
		{"0", "0"}, {"100", "100"}, {"0100", "100"}, {"12.50", "12.5"}, {"0.333333333333333333", "0.333333333333333333"},
		{"9999999999999999.999999999999999999", "9999999999999999.999999999999999999"},
		{"1e3", ""}, {"1E3", ""}, {"1e-2", ""}, {"0.1e1", ""}, {"+1", ""}, {"-1", ""}, {"-0", ""}, {"1,000", ""}, {"1_000", ""},
		{"1 000", ""}, {" 1", ""}, {"1\n", ""}, {"1.", ""}, {".5", ""}, {"0x10", ""}, {"NaN", ""}, {"Inf", ""}, {"", ""}, {"٣", ""}, {"１", ""},
		{"10000000000000000", ""}, {"0.0000000000000000001", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDecimal("quota", tc.in)
			if tc.want == "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "quota ") {
					t.Errorf("ParseDecimal(%q) = %s, %v; want ErrInvalid naming the quota", tc.in, got, err)
				}
				return
			}
			if err != nil || !got.Equal(decimal.RequireFromString(tc.want)) {
				t.Errorf("ParseDecimal(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestCheckText: text that prints as itself passes, in any script; a
// control character, a format character (Cf: bidirectional controls,
// zero-width characters, the byte order mark), a line or paragraph
// separator, or bytes that are not UTF-8 are refused, named.
func TestCheckText(t *testing.T) {
	for _, ok := range []string{"", "grant 2026-11", "Förderung für Ökologie", "研究室", "مختبر", "עברית", "☃ 😀", "a\u00a0b", "tab\u3000wide", "\ufffd"} {
		if err := CheckText("description", ok); err != nil {
			t.Errorf("CheckText(%q): %v", ok, err)
		}
	}
	for _, tc := range []struct{ in, says string }{
		{"a\nb", "control character U+000A"},
		{"\x1b[2J", "control character U+001B"},
		{"a\x7f", "control character U+007F"},
		{"a\u0085", "control character U+0085"},
		{"grant \u202e1202", "format character U+202E"},
		{"\u202a", "format character U+202A"},
		{"\u2066x\u2069", "format character U+2066"},
		{"a\u200bb", "format character U+200B"},
		{"a\u200cb", "format character U+200C"},
		{"a\u200db", "format character U+200D"},
		{"\u200e", "format character U+200E"},
		{"\u2060", "format character U+2060"},
		{"\ufeffgrant", "format character U+FEFF"},
		{"soft\u00adhyphen", "format character U+00AD"},
		{"\U000e0001", "format character U+E0001"},
		{"a\u2028b", "line separator U+2028"},
		{"a\u2029b", "paragraph separator U+2029"},
		{"grant \xff", "is not valid UTF-8"},
	} {
		err := CheckText("description", tc.in)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "description ") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckText(%q) = %v; want ErrInvalid saying %q", tc.in, err, tc.says)
		}
	}
}

// FuzzParseAmount: the amount parsers are the bank's one grammar
// (ParseDecimal) and the amount's checks, nothing else: what they take is
// a plain decimal that prints back as it was read, and nothing with a
// sign, an exponent or a separator is taken. The shared target that holds
// the interfaces to the grammar (the JSON API, Gold and the command line)
// is FuzzAmount in proto/api, which can reach all three.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"100", "12.50", "0", "-1", "1e3", "0.001", "999999999999999.99", "+1", "0.1e1", ".5", "1.", "1,000", "0100"} {
		f.Add(s, uint8(2))
	}
	f.Fuzz(func(t *testing.T, s string, places uint8) {
		p := int32(places % 9) // a bank's precision is 0 to 8 places
		plain, perr := ParseDecimal("amount", s)
		d, err := ParseAmount(s, p)
		credit, cerr := ParseCreditLimit(s, p)
		for _, e := range []error{perr, err, cerr} {
			if e != nil && !errors.Is(e, ErrInvalid) {
				t.Fatalf("%q: error %v is not ErrInvalid", s, e)
			}
		}
		if strings.ContainsAny(s, "eE+-, _") && perr == nil {
			t.Fatalf("ParseDecimal(%q) took a sign, an exponent or a separator", s)
		}
		// The amount parsers are the grammar and the amount's checks.
		if (err == nil) != (perr == nil && CheckAmount(plain, p) == nil) {
			t.Fatalf("%q at %d places: ParseAmount says %v, the grammar %v and CheckAmount %v", s, p, err, perr, CheckAmount(plain, p))
		}
		if (cerr == nil) != (err == nil || perr == nil && plain.IsZero()) {
			t.Fatalf("%q at %d places: ParseCreditLimit says %v, ParseAmount %v", s, p, cerr, err)
		}
		if perr != nil {
			return
		}
		// Read exactly, as decimal reads it, and printed back (as the bank
		// prints it, and as a client's JSON encoder writes it) to text
		// the grammar reads as the same number.
		if want, err := decimal.NewFromString(s); err != nil || !want.Equal(plain) {
			t.Fatalf("ParseDecimal(%q) = %s; decimal reads %s, %v", s, plain, want, err)
		}
		printed, _ := json.Marshal(plain)
		var text string
		if err := json.Unmarshal(printed, &text); err != nil {
			t.Fatalf("%q is written to JSON as %s, not a string", s, printed)
		}
		for _, again := range []string{plain.String(), text} {
			if back, err := ParseDecimal("amount", again); err != nil || !back.Equal(plain) {
				t.Fatalf("%q printed as %q reads back as %s, %v", s, again, back, err)
			}
		}
		if err == nil {
			if !d.Equal(plain) || !credit.Equal(plain) || !d.IsPositive() || d.GreaterThan(MaxAmount) || !d.Equal(d.Truncate(p)) {
				t.Fatalf("ParseAmount(%q, %d) = %s accepted out of range", s, p, d)
			}
			if again, err := ParseAmount(d.StringFixed(p), p); err != nil || !again.Equal(d) {
				t.Fatalf("round trip of %q: %s, %v", s, again, err)
			}
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"now", "now-2h", "2026-11-22", "2026-11-22 14:30", "2026-11-22T05:00:00Z", "now+999999999w"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now, time.UTC)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseTime(%q): error %v is not ErrInvalid", s, err)
			}
			return
		}
		if got.Location() != time.UTC || got.Before(EarliestTime) {
			t.Fatalf("ParseTime(%q) = %s, not UTC or before %s", s, got, EarliestTime)
		}
	})
}

// FuzzDecodeEntry feeds arbitrary bytes, as a stored entry's body, to the
// decoder the audit and every reader use: it must never panic, and a body
// it accepts must say the entry number it is stored under and seal again
// to an entry that decodes to the same (whose own body is the same bytes).
func FuzzDecodeEntry(f *testing.F) {
	e := Entry{Seq: 2, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Actor: "a", Kind: KindDeposit, Node: "chem",
		Deltas: []Delta{{Allocation: 1, Account: "chem", Amount: decimal.RequireFromString("10.5"), Deposited: decimal.RequireFromString("10.5")}}}
	seed, _ := json.Marshal(e)
	f.Add(seed)
	e.Lien = &Lien{ID: 1, Holds: []Hold{{Allocation: 1, Amount: decimal.New(-1, 40)}}, Detail: json.RawMessage(`{"a":1}`)}
	e.Charge = &Charge{ID: 2, Final: true, Time: e.Time.In(time.FixedZone("", 3600)), Detail: json.RawMessage(`[]`)}
	e.Record, e.Answer, e.PrevHash = &Record{Kind: "k", Key: "x"}, strings.Repeat("0a", 32), "0A"
	seed, _ = encodeEntry(e)
	f.Add(seed)
	f.Add([]byte(`{"seq":2,"kind":"init","settings":{"precision":2}}`))
	f.Add([]byte(`{"seq":2,"deltas":[{"amount":"1e99999"}]}`))
	f.Add([]byte(`{"seq":3}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := DecodeEntry(StoredEntry{Seq: 2, Body: raw})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if got.Seq != 2 {
			t.Fatalf("decoded entry %d from the body stored as entry 2", got.Seq)
		}
		se, err := SealEntry(got)
		if err != nil {
			return // a value JSON reads but cannot write (an extreme decimal)
		}
		again, err := DecodeEntry(se)
		if err != nil {
			t.Fatalf("decode of own encoding %s: %v", se.Body, err)
		}
		if se2, err := SealEntry(again); err != nil || !bytes.Equal(se2.Body, se.Body) {
			t.Fatalf("round trip changed the entry:\n%x\n%x (%v)", se.Body, se2.Body, err)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExcerpt: an input is quoted whole when short; a long one by its
// first 64 characters and its length, cut between characters.
func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 5000)
	for _, tc := range []struct{ in, want string }{
		{"chem", `"chem"`},
		{"a\x1bb", `"a\x1bb"`},
		{strings.Repeat("x", 64), `"` + strings.Repeat("x", 64) + `"`},
		{strings.Repeat("x", 65), `"` + strings.Repeat("x", 64) + `"… (65 characters)`},
		{long, `"` + strings.Repeat("é", 64) + `"… (5000 characters)`},
	} {
		if got := Excerpt(tc.in); got != tc.want {
			t.Errorf("Excerpt(%.20q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestValidationErrorsDoNotEchoHugeInput: each check of a name, amount,
// time or kind names the problem with an excerpt of the input.
func TestValidationErrorsDoNotEchoHugeInput(t *testing.T) {
	huge := strings.Repeat("x", 5000)
	now := time.Now()
	for name, err := range map[string]error{
		"node name":    CheckNodeName(huge),
		"bad node":     CheckNodeName("chem." + huge + "!"),
		"machine name": CheckMachineName(huge),
		"user name":    CheckUserName(huge),
		"amount":       func() error { _, err := ParseAmount(huge, 2); return err }(),
		"time":         func() error { _, err := ParseTime(huge, now, time.UTC); return err }(),
		"kind":         func() error { _, err := ParseKind(huge); return err }(),
	} {
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "characters)") {
			t.Errorf("%s: error of %d bytes: %.300v", name, len(fmt.Sprint(err)), err)
		}
	}
}

// FuzzReadEntryHead: reading an entry's head never panics, and on every
// body the ledger writes (an entry decoded from the fuzzer's bytes, sealed
// again) it reads the entry's time, actor and request id.
func FuzzReadEntryHead(f *testing.F) {
	e := Entry{Seq: 2, Time: time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC), Actor: "client:a", RequestID: "r-1", Kind: KindDeposit, Node: "chem"}
	seed, _ := json.Marshal(e)
	f.Add(seed)
	seed, _ = encodeEntry(e)
	f.Add(seed)
	f.Add([]byte(`{"seq":2,"time":"2026-11-26T10:00:00Z","actor":"x","kind":"init"}`))
	f.Add([]byte(`{"kind":"init","time":"2026-11-26T10:00:00Z"}`))
	f.Add([]byte(`{"seq":2,"actor":{"time":1}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ReadEntryHead(raw) // any bytes: an error or a head, never a panic
		got, err := DecodeEntry(StoredEntry{Seq: 2, Body: raw})
		if err != nil {
			return
		}
		se, err := SealEntry(got)
		if err != nil {
			return
		}
		head, err := ReadEntryHead(se.Body)
		if err != nil || !head.Time.Equal(got.Time) || head.Actor != got.Actor || head.RequestID != got.RequestID {
			t.Fatalf("head of %s: %+v, %v; the entry has %v, %q, %q", se.Body, head, err, got.Time, got.Actor, got.RequestID)
		}
	})
}
