package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// BenchmarkProjectPage serves chem.lab1's page to amy from a bank with a
// year of daily usage (365 days of her jobs, and bob's every other day),
// in process: the bar is 100 ms a page on the server. Per month,
// the page's charts span the whole year; per day, its last 31 days. The
// bar is absolute, not a ratio to a baseline as the storage benchmarks'
// are: it is the time a person waits for the page, and the page's reads
// of the bank (every charge of the bank, for the usage) are most of it.
func BenchmarkProjectPage(b *testing.B) {
	s := newSite(b)
	s.seed(365)
	browser := s.signedIn("amy")
	u, _ := url.Parse(s.url)
	cookies := browser.client.Jar.Cookies(u)
	for _, period := range []string{"month", "day"} {
		b.Run("period="+period, func(b *testing.B) {
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, "/node?name=chem.lab1&by=user&period="+period, nil)
				for _, c := range cookies {
					r.AddCookie(c)
				}
				w := httptest.NewRecorder()
				s.handler.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("the page: %d\n%s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
