package client_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// TestConcurrentRequestsReuseConnections: one client sending from 16
// goroutines, round after round, keeps its connections open between
// rounds instead of opening new ones (net/http's default transport keeps
// two idle).
func TestConcurrentRequestsReuseConnections(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(5 * time.Millisecond) // so that the requests of a round overlap
		io.WriteString(w, `{"status":"ok"}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := client.New(srv.URL, auth.Key{ID: "k"}, client.WithRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, rounds = 16, 5
	for range rounds {
		var wg sync.WaitGroup
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Health(context.Background()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	if n := opened.Load(); n > goroutines {
		t.Errorf("%d rounds of %d concurrent requests opened %d connections, want at most %d", rounds, goroutines, n, goroutines)
	}
}
