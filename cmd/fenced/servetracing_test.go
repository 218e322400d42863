package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/testdb"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, "fenced serve" exports the
// producer span of each enqueue through OTLP (http/protobuf), in the trace
// the job's metadata carried, as service "fenced"; spans still batched are
// flushed when it stops.
func TestServeExportsSpansThroughOTLP(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(nil)
	}))
	defer collector.Close()

	c := newCLI(t, testdb.SQLite(t))
	c.ok("migrate")
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL, "OTEL_BSP_SCHEDULE_DELAY=50")
	s := c.serve()
	contains(t, "serve log", s.stderr.String(), "spans exported through OTLP")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	status, _, _ := s.call("POST", "/v1/jobs", `{"kind": "k", "metadata": {"traceparent": "00-`+traceID+`-00f067aa0ba902b7-01"}}`)
	if status != http.StatusCreated {
		t.Fatalf("enqueue: %d", status)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		var names []string
		var service string
		for _, req := range got {
			for _, rs := range req.ResourceSpans {
				for _, a := range rs.Resource.GetAttributes() {
					if a.Key == "service.name" {
						service = a.Value.GetStringValue()
					}
				}
				for _, ss := range rs.ScopeSpans {
					for _, sp := range ss.Spans {
						if sp.Name == "send default" && hex.EncodeToString(sp.TraceId) == traceID {
							names = append(names, sp.Name)
						}
					}
				}
			}
		}
		mu.Unlock()
		if len(names) == 1 && service == "fenced" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector got %d exports: spans %v of service %q, want the enqueue's in trace %s", len(got), names, service, traceID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An exporter or protocol "fenced serve" does not have is refused before
// it listens.
func TestServeRefusesAnUnknownExporter(t *testing.T) {
	t.Parallel()
	for _, env := range []string{"OTEL_TRACES_EXPORTER=zipkin", "OTEL_METRICS_EXPORTER=prometheus", "OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_PROTOCOL=http/json", "OTEL_METRICS_EXPORTER=otlp OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json"} {
		c := newCLI(t, testdb.SQLite(t))
		c.env = append(c.env, strings.Fields(env)...)
		r := c.fails(exitUsage, "serve")
		contains(t, "stderr", r.stderr, "OTEL_")
	}
}
