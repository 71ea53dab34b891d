package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/client"
)

// TestAnswerLength reads answers that announce their length, answers that
// do not (chunked) and an answer shorter than it announced, which fails
// rather than decode what came.
func TestAnswerLength(t *testing.T) {
	const ok = `{"status":"ok"}`
	for _, tc := range []struct {
		name    string
		answer  func(http.ResponseWriter)
		wantErr bool
	}{
		{"length", func(w http.ResponseWriter) { io.WriteString(w, ok) }, false},
		{"chunked", func(w http.ResponseWriter) {
			io.WriteString(w, ok[:5])
			w.(http.Flusher).Flush() // the length is not known yet: chunked
			io.WriteString(w, ok[5:])
		}, false},
		{"short", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, ok)
			w.(http.Flusher).Flush()
			// Cut the connection, or the client would wait for the rest.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { tc.answer(w) }))
			defer srv.Close()
			c, err := client.New(srv.URL, auth.Key{ID: "k"}, client.WithRetries(1, 0))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Health(context.Background()); (err != nil) != tc.wantErr {
				t.Errorf("Health: %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
