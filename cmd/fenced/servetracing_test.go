package main

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/testdb"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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
	// A trace given in the traceparent header: the producer span is its
	// child, and the job's metadata carries the producer span.
	const headerTrace, headerParent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, _ := http.NewRequest("POST", s.base+"/v1/jobs", strings.NewReader(`{"kind": "h"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+headerTrace+"-"+headerParent+"-01")
	req.Header.Set("tracestate", "rojo=00f067aa0ba902b7")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var enqueued struct {
		ID       int64
		Metadata map[string]string
	}
	if err := json.NewDecoder(res.Body).Decode(&enqueued); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("enqueue with a traceparent header: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		var names []string
		var service string
		var headerSpan *tracepb.Span
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
						if hex.EncodeToString(sp.TraceId) == headerTrace {
							headerSpan = sp
						}
					}
				}
			}
		}
		mu.Unlock()
		if len(names) == 1 && service == "fenced" && headerSpan != nil {
			if parent := hex.EncodeToString(headerSpan.ParentSpanId); parent != headerParent || headerSpan.Name != "send default" {
				t.Fatalf("the span in the header's trace: %q, parent %s, want send default, a child of %s", headerSpan.Name, parent, headerParent)
			}
			want := "00-" + headerTrace + "-" + hex.EncodeToString(headerSpan.SpanId) + "-01"
			if enqueued.Metadata["traceparent"] != want || enqueued.Metadata["tracestate"] != "rojo=00f067aa0ba902b7" {
				t.Fatalf("the job's metadata %v, want traceparent %s (its producer span) and the header's tracestate", enqueued.Metadata, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector got %d exports: spans %v of service %q, want the enqueue's in trace %s, and one in trace %s", len(got), names, service, traceID, headerTrace)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Without tracing, "fenced serve" still stores the traceparent and
// tracestate headers of an enqueue in the job's metadata, for the worker
// in whichever language to continue the trace.
func TestServeCarriesTraceHeadersUntraced(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	c.ok("migrate")
	s := c.serve()
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, _ := http.NewRequest("POST", s.base+"/v1/jobs", strings.NewReader(`{"kind": "h", "metadata": {"tenant": "7"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", parent)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var j struct{ Metadata map[string]string }
	if err := json.NewDecoder(res.Body).Decode(&j); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("enqueue: %d %v", res.StatusCode, err)
	}
	if len(j.Metadata) != 2 || j.Metadata["traceparent"] != parent || j.Metadata["tenant"] != "7" {
		t.Fatalf("metadata %v, want the header's traceparent beside tenant", j.Metadata)
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
