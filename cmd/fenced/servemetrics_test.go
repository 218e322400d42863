package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// metricsCollector is an OTLP/HTTP receiver of metrics: each export it
// gets, decoded.
type metricsCollector struct {
	*httptest.Server
	mu  sync.Mutex
	got []*colmetrics.ExportMetricsServiceRequest
}

func newMetricsCollector(t *testing.T) *metricsCollector {
	c := &metricsCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &colmetrics.ExportMetricsServiceRequest{}
		if r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "not an OTLP metrics export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.got = append(c.got, req)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(nil)
	}))
	t.Cleanup(c.Close)
	return c
}

// enqueued is the last value of fenced.jobs.enqueued exported for kind
// (cumulative), -1 when none was; and the service the exports named.
func (c *metricsCollector) enqueued(kind string) (n int64, service string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = -1
	for _, req := range c.got {
		for _, rm := range req.ResourceMetrics {
			for _, a := range rm.Resource.GetAttributes() {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != "fenced.jobs.enqueued" {
						continue
					}
					for _, p := range m.GetSum().GetDataPoints() {
						for _, a := range p.Attributes {
							if a.Key == "fenced.job.kind" && a.Value.GetStringValue() == kind {
								n = p.GetAsInt()
							}
						}
					}
				}
			}
		}
	}
	return n, service
}

// names is every metric name the collector got.
func (c *metricsCollector) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, req := range c.got {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if !slices.Contains(names, m.Name) {
						names = append(names, m.Name)
					}
				}
			}
		}
	}
	return names
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, "fenced serve" exports
// fencedotel's metrics through OTLP (http/protobuf) as service "fenced";
// with an export interval longer than the test, what it counted arrives
// because it flushes them when it stops.
func TestServeExportsMetricsThroughOTLP(t *testing.T) {
	t.Parallel()
	collector := newMetricsCollector(t)
	c := newCLI(t, testdb.SQLite(t))
	c.ok("migrate")
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_METRIC_EXPORT_INTERVAL=3600000")
	s := c.serve()
	contains(t, "serve log", s.stderr.String(), "metrics exported through OTLP")
	for range 3 {
		s.want(http.StatusCreated, "POST", "/v1/jobs", `{"kind": "counted"}`)
	}
	s.want(http.StatusCreated, "POST", "/v1/jobs", `{"kind": "other", "queue": "q"}`)
	if n, _ := collector.enqueued("counted"); n != -1 {
		t.Fatalf("exported %d before the interval or the stop", n)
	}
	s.stop()
	n, service := collector.enqueued("counted")
	if n != 3 || service != "fenced" {
		t.Fatalf("the collector got fenced.jobs.enqueued %d for kind counted of service %q (metrics %v), want 3 of fenced", n, service, collector.names())
	}
	if n, _ := collector.enqueued("other"); n != 1 {
		t.Fatalf("fenced.jobs.enqueued %d for kind other, want 1", n)
	}
}

// Each signal is decided on its own: OTEL_METRICS_EXPORTER=none exports
// the spans and no metrics, OTEL_TRACES_EXPORTER=none the metrics and no
// spans; OTEL_SDK_DISABLED=true neither.
func TestServeTelemetrySignalsApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, want, not string }{
		{"OTEL_METRICS_EXPORTER=none", "spans exported", "metrics exported"},
		{"OTEL_TRACES_EXPORTER=none", "metrics exported", "spans exported"},
		{"OTEL_SDK_DISABLED=true", "listening", "exported through OTLP"},
	} {
		c := newCLI(t, testdb.SQLite(t))
		c.ok("migrate")
		c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9", tc.env)
		s := c.serve()
		log := s.stderr.String()
		contains(t, tc.env, log, tc.want)
		if strings.Contains(log, tc.not) {
			t.Fatalf("%s: the log says %q: %s", tc.env, tc.not, log)
		}
	}
}
