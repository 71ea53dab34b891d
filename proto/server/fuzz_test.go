package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ingot-hpc/ingot/proto/api"
)

// mutating are the endpoints whose bodies the server decodes.
var mutating = []string{"/v1/deposits", "/v1/transfers", "/v1/quotes", "/v1/liens", "/v1/liens/release", "/v1/charges", "/v1/batch"}

// FuzzRequestBodies sends arbitrary bodies, signed by the admin, to every
// endpoint that decodes one: the server must answer JSON (an error with a
// listed code, or a result), never panic, and leave a bank that passes the
// audit (the test bank audits itself at cleanup).
func FuzzRequestBodies(f *testing.F) {
	f.Add(uint8(0), []byte(`{"account":"chem","amount":"10"}`))
	f.Add(uint8(1), []byte(`{"from":"chem","to":"bio","amount":"1e400"}`))
	f.Add(uint8(3), []byte(`{"machine":"hpc1","job_id":"1","user":"amy","request":{"processors":-1,"wallclock_limit_seconds":60}}`))
	f.Add(uint8(5), []byte(`{"machine":"hpc1","job_id":"1","user":"amy","usage":{"processors":1,"wallclock_seconds":9223372036854775807,"state":"completed"}}`))
	f.Add(uint8(2), []byte(`[`))
	f.Add(uint8(4), []byte(`{"machine":"hpc1","job_id":"\u0000"}`))
	f.Add(uint8(6), []byte(`{"items":[{"lien":{"machine":"hpc1","job_id":"1","user":"amy","request":{"processors":1,"wallclock_limit_seconds":60}}},{"charge":{"machine":"hpc1","job_id":"1","usage":{"processors":1,"wallclock_seconds":30,"state":"completed"}}},{"release":{"machine":"hpc1","job_id":"1"}}]}`))
	f.Add(uint8(6), []byte(`{"items":[{},{"lien":null,"release":{"machine":"hpc2","job_id":"x"},"charge":{"machine":"hpc2","job_id":"x"}},{"release":{"machine":"","job_id":""}}]}`))
	f.Add(uint8(6), []byte(`{"items":null}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		s := newSite(t)
		w := s.do(exchange{key: s.keys["root"], method: http.MethodPost, target: mutating[int(which)%len(mutating)], body: body, requestID: "fuzz"})
		var answer map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
			t.Fatalf("status %d, body not a JSON object: %v\n%s", w.Code, err, w.Body.String())
		}
		if w.Code == http.StatusOK {
			return
		}
		code, _ := answer["code"].(string)
		if api.Code(code).Status() != w.Code {
			t.Fatalf("status %d with code %q, which is not listed for it:\n%s", w.Code, code, w.Body.String())
		}
		if w.Code >= 500 {
			t.Fatalf("a request body made the server fail: %s", w.Body.String())
		}
	})
}
