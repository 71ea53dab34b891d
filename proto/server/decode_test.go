package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/ingot-hpc/ingot/proto/api"
)

// FuzzDecode decodes any body as a lien's, a charge's and a batch's
// request, as the server decodes request bodies (call.decode, after
// api.CheckBody). A refusal must be an api.Error with one of the body's
// codes. A body it accepts must be one
// json.Unmarshal reads the same (the server's checks only refuse), and the
// value's JSON, as the Go client sends it, must be accepted again and
// read back to the same JSON.
func FuzzDecode(f *testing.F) {
	for _, body := range []string{
		`{"machine":"hpc1","job_id":"x1","user":"amy","request":{"processors":4,"wallclock_limit_seconds":3600}}`,
		`{"machine":"hpc1","job_id":"x1","usage":{"processors":4,"wallclock_seconds":1800,"wallclock_limit_seconds":3600,"state":"completed"}}`,
		`{"machine":"hpc1","job_id":"1","user":"amy","project":"p","request":{"processors":1,"nodes":2,"gpus":3,"memory_mb":4,"disk_mb":5,"qos":"q","partition":"p","node_type":"n","licenses":{"a":1,"b":2},"wallclock_limit_seconds":60,"start":"2026-11-22T10:16:11.83239Z"},"quote":7,"replace":true}`,
		`{"machine":"hpc1","job_id":"1","user":"amy","project":"p","usage":{"processors":1,"licenses":{},"wallclock_seconds":60,"cpu_seconds":1,"start":"2026-11-22T10:16:11Z","end":"2026-11-22T10:17:11+02:00","state":"timeout"},"incremental":true,"reservation":"r"}`,
		`{"items":[{"lien":{"machine":"hpc1","job_id":"1","user":"amy","request":{"processors":1,"wallclock_limit_seconds":60}}},{"charge":{"machine":"hpc1","job_id":"1","usage":{"processors":1,"wallclock_seconds":30,"state":"completed"}}},{"release":{"machine":"hpc1","job_id":"1"}}]}`,
		`{"machine":"hpc1","machine":"hpc2"}`, `{"Machine":"hpc1"}`, `{"machine":"h\u0070c1<&>"}`, `{"quote":-0}`,
		`{"request":{"processors":1.0}}`, `{"usage":{"state":"bogus"}}`, `{"amunt":"1"}`, ` {} `, `{}{}`, `{} x`, ``, `null`, `[`,
		"{\"user\":\"a\xffb\"}", `{"user":"a\u001bb"}`, `{"request":{"licenses":{"a":1,"a":2}}}`, `{"items":[{"lien":{"Job_ID":"1"}}]}`,
	} {
		for which := range uint8(3) {
			f.Add(which, []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		switch which % 3 {
		case 0:
			checkDecode[api.LienRequest](t, body)
		case 1:
			checkDecode[api.ChargeRequest](t, body)
		default:
			checkDecode[api.BatchRequest](t, body)
		}
	})
}

// checkDecode checks call.decode of body into a T (see FuzzDecode).
func checkDecode[T any](t *testing.T, body []byte) {
	v, err := decodeAs[T](body)
	if err != nil {
		if e, ok := errors.AsType[*api.Error](err); !ok || !slices.Contains(bodyCodes, e.Code) {
			t.Fatalf("%q: refused with %v, want an api.Error with one of the codes %v", body, err, bodyCodes)
		}
		return
	}
	sent := marshal(t, v)
	var u T
	if err := json.Unmarshal(body, &u); err != nil {
		t.Fatalf("%q: accepted, but json.Unmarshal refuses it: %v", body, err)
	}
	if got := marshal(t, u); !bytes.Equal(got, sent) {
		t.Fatalf("%q: decoded as\n%s\nbut json.Unmarshal reads\n%s", body, sent, got)
	}
	again, err := decodeAs[T](sent)
	if err != nil {
		t.Fatalf("%q: its JSON %s is refused: %v", body, sent, err)
	}
	if got := marshal(t, again); !bytes.Equal(got, sent) {
		t.Fatalf("%q: its JSON\n%s\nis read back as\n%s", body, sent, got)
	}
}

// bodyCodes are the codes of a refused body.
var bodyCodes = []api.Code{api.CodeBadJSON, api.CodeInvalidUTF8, api.CodeDuplicateKey, api.CodeKeySpelling, api.CodeControlCharacter}

func decodeAs[T any](body []byte) (T, error) {
	var v T
	err := (&call{body: body}).decode(&v)
	return v, err
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%+v): %v", v, err)
	}
	return b
}
