package metrics

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the metrics are served.
const Path = "/metrics"

// unknownEndpoint labels the requests for a path that is no endpoint.
const unknownEndpoint = "unknown"

// Metrics are the metrics of one server.
type Metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	batch    prometheus.Histogram
	commit   prometheus.Histogram

	mu    sync.Mutex
	known map[seriesKey]series
}

// New returns a server's metrics in a registry of their own.
func New() *Metrics {
	m := &Metrics{
		known:    map[seriesKey]series{},
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingot_http_requests_total",
			Help: "HTTP requests answered, by endpoint, method and status code.",
		}, []string{"endpoint", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ingot_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by endpoint.",
			Buckets: prometheus.DefBuckets,
		}, []string{"endpoint"}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ingot_commit_batch_size",
			Help: "Update calls made durable together by one bbolt commit (group commit).",
			// 1 to 1024, the store's largest group.
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ingot_commit_duration_seconds",
			Help: "Time from the start of a group of update calls to the end of its commit: the calls, the page writes and the fsyncs.",
			// 0.5 ms (a fast SSD's fsync) to about 1 s.
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 12),
		}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.batch, m.commit,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// series are the request metrics of one endpoint, method and status code,
// looked up once: WithLabelValues hashes the labels at every call.
type series struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// seriesKey is what picks a request's series.
type seriesKey struct {
	endpoint, method string
	code             int
}

// ObserveRequest counts and times a request answered. endpoint names its
// endpoint, from the server's route table, or is "" when its path is none:
// so endpoints added to the table later are counted without more code, and
// unknown paths all fall under "unknown". It is made to be the server's
// server.WithObserver.
func (m *Metrics) ObserveRequest(endpoint, method string, code int, d time.Duration) {
	if endpoint == "" {
		endpoint = unknownEndpoint
	}
	s := m.series(seriesKey{endpoint, labelOfMethod(method), code})
	s.requests.Inc()
	s.latency.Observe(d.Seconds())
}

// series returns the series of key, making it the first time.
func (m *Metrics) series(key seriesKey) series {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.known[key]
	if !ok {
		s = series{m.requests.WithLabelValues(key.endpoint, key.method, strconv.Itoa(key.code)), m.latency.WithLabelValues(key.endpoint)}
		m.known[key] = s
	}
	return s
}

// labelOfMethod is an HTTP method's label: one of the methods HTTP defines
// in lower case, or "unknown", so that clients cannot add series by making
// methods up (promhttp's rule, which takes the methods in either case).
func labelOfMethod(method string) string {
	if label, ok := methodLabels[method]; ok {
		return label
	}
	return "unknown"
}

// methodLabels are the labels of labelOfMethod, made once rather than
// lower-cased at every request.
var methodLabels = func() map[string]string {
	labels := map[string]string{}
	for _, m := range []string{"get", "put", "head", "post", "delete", "connect", "options", "notify", "trace", "patch"} {
		labels[m], labels[strings.ToUpper(m)] = m, m
	}
	return labels
}()

// ObserveCommit records one group commit of the store; it is made to be
// the store's boltstore.Options.OnCommit.
func (m *Metrics) ObserveCommit(calls int, d time.Duration) {
	m.batch.Observe(float64(calls))
	m.commit.Observe(d.Seconds())
}

// CountLiens adds the gauge ingot_liens_open, which asks count at each
// scrape. It is separate from New because the store, which counts the
// liens, is opened after the metrics that its OnCommit feeds.
func (m *Metrics) CountLiens(count func() (int, error)) {
	m.registry.MustRegister(lienGauge(count))
}

var liensOpen = prometheus.NewDesc("ingot_liens_open",
	"Liens in the active state: placed for a job, not yet settled, released or swept as expired.", nil, nil)

// lienGauge is a collector that reads the count of open liens when scraped,
// rather than a gauge kept up to date by every lien change.
type lienGauge func() (int, error)

func (g lienGauge) Describe(ch chan<- *prometheus.Desc) { ch <- liensOpen }

func (g lienGauge) Collect(ch chan<- prometheus.Metric) {
	n, err := g()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(liensOpen, fmt.Errorf("counting the open liens: %w", err))
		return
	}
	ch <- prometheus.MustNewConstMetric(liensOpen, prometheus.GaugeValue, float64(n))
}

// WatchFilesystem adds the gauges ingot_bank_filesystem_avail_bytes and
// ingot_bank_filesystem_size_bytes: the space left to an unprivileged
// process (what the server, which is not root, may still write) and the
// size of the file system that holds dir, the bank's directory, read with
// statfs at each scrape. The alert on a filling disk (contrib/prometheus)
// watches them: they are the file system of the bank itself, on the bank's
// host, whatever its mount point, with no node_exporter configured for it.
// A bank in PostgreSQL has no directory: the server adds none.
func (m *Metrics) WatchFilesystem(dir string) {
	m.registry.MustRegister(filesystemGauge(dir))
}

var (
	filesystemAvail = prometheus.NewDesc("ingot_bank_filesystem_avail_bytes",
		"Bytes an unprivileged process may still write on the file system that holds the bank (statfs's f_bavail × f_frsize).", nil, nil)
	filesystemSize = prometheus.NewDesc("ingot_bank_filesystem_size_bytes",
		"Size in bytes of the file system that holds the bank (statfs's f_blocks × f_frsize).", nil, nil)
)

// filesystemGauge is a collector that reads the bank's file system when
// scraped. Its figures name no path: the page names nothing a reader could
// not guess (package doc).
type filesystemGauge string

func (g filesystemGauge) Describe(ch chan<- *prometheus.Desc) {
	ch <- filesystemAvail
	ch <- filesystemSize
}

func (g filesystemGauge) Collect(ch chan<- prometheus.Metric) {
	avail, size, err := statFilesystem(string(g))
	if err != nil {
		err = fmt.Errorf("reading the bank's file system: %w", err)
		ch <- prometheus.NewInvalidMetric(filesystemAvail, err)
		ch <- prometheus.NewInvalidMetric(filesystemSize, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(filesystemAvail, prometheus.GaugeValue, float64(avail))
	ch <- prometheus.MustNewConstMetric(filesystemSize, prometheus.GaugeValue, float64(size))
}

// Handler serves the metrics. A collector's error is logged, and the other
// metrics are still served.
func (m *Metrics) Handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
}
