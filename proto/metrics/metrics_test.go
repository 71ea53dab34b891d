package metrics

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRequestLabelsAreBounded observes requests with a made-up method and
// made-up paths: they fall under "unknown", so clients cannot add series.
func TestRequestLabelsAreBounded(t *testing.T) {
	m := New()
	for _, r := range []struct{ endpoint, method string }{
		{"/v1/known", "GET"}, {"/v1/known", "BREW"}, {"", "GET"}, {"", "get"}, {"/v1/known", "GET"},
	} {
		m.ObserveRequest(r.endpoint, r.method, http.StatusTeapot, time.Millisecond)
	}
	for _, tc := range []struct {
		endpoint, method string
		want             float64
	}{
		{"/v1/known", "get", 2},
		{"/v1/known", "unknown", 1},
		{"unknown", "get", 2},
	} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(tc.endpoint, tc.method, "418")); got != tc.want {
			t.Errorf("requests{endpoint=%s, method=%s, code=418} = %v, want %v", tc.endpoint, tc.method, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.requests); n != 3 {
		t.Errorf("%d request series, want 3", n)
	}
	if n := testutil.CollectAndCount(m.latency); n != 2 {
		t.Errorf("%d latency series, want 2 (/v1/known and unknown)", n)
	}
}

// TestLienCountFails checks that a failing count of the liens is logged and
// leaves it out, while the other metrics are still served.
func TestLienCountFails(t *testing.T) {
	m := New()
	m.CountLiens(func() (int, error) { return 0, errors.New("disk on fire") })
	m.ObserveCommit(3, time.Millisecond)
	var log bytes.Buffer
	w := httptest.NewRecorder()
	m.Handler(slog.New(slog.NewJSONHandler(&log, nil))).ServeHTTP(w, httptest.NewRequest("GET", Path, nil))
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, "ingot_commit_batch_size_sum 3") || strings.Contains(body, "ingot_liens_open ") {
		t.Errorf("status %d, page:\n%s\nwant 200 with the commit and without the liens", w.Code, body)
	}
	if !strings.Contains(log.String(), "disk on fire") {
		t.Errorf("log %q does not say why the liens are missing", log.String())
	}
}
