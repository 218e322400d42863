package main

import (
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// grpcCollector is an OTLP/gRPC receiver of traces and metrics.
type grpcCollector struct {
	coltrace.UnimplementedTraceServiceServer
	colmetrics.UnimplementedMetricsServiceServer
	mu      sync.Mutex
	traces  []string // the trace ids of the spans it got
	metrics []string // the names of the metrics it got
}

func (g *grpcCollector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				g.traces = append(g.traces, hex.EncodeToString(sp.TraceId))
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// metricsServer is the collector's metrics service (its Export has
// another signature than the trace service's).
type metricsServer struct{ *grpcCollector }

func (m metricsServer) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, x := range sm.Metrics {
				m.metrics = append(m.metrics, x.Name)
			}
		}
	}
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

// With OTEL_EXPORTER_OTLP_PROTOCOL=grpc, "fenced serve" exports both
// signals through OTLP/gRPC; what is still batched arrives when it stops.
func TestServeExportsThroughOTLPgRPC(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &grpcCollector{}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, g)
	colmetrics.RegisterMetricsServiceServer(srv, metricsServer{g})
	go srv.Serve(ln)
	defer srv.Stop()

	c := newCLI(t, testdb.SQLite(t))
	c.ok("migrate")
	c.env = append(c.env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+ln.Addr().String(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_BSP_SCHEDULE_DELAY=3600000", "OTEL_METRIC_EXPORT_INTERVAL=3600000")
	s := c.serve()
	contains(t, "serve log", s.stderr.String(), `msg="tracing: spans exported through OTLP" protocol=grpc`)
	contains(t, "serve log", s.stderr.String(), "metrics exported through OTLP\" protocol=grpc")
	const trace = "0af7651916cd43dd8448eb211c80319c"
	req, _ := http.NewRequest("POST", s.base+"/v1/jobs", strings.NewReader(`{"kind": "g"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+trace+"-b7ad6b7169203331-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("enqueue: %d", res.StatusCode)
	}
	s.stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.traces) != 1 || g.traces[0] != trace {
		t.Fatalf("the collector got spans of traces %v, want one of %s", g.traces, trace)
	}
	if !strings.Contains(strings.Join(g.metrics, " "), "fenced.jobs.enqueued") {
		t.Fatalf("the collector got metrics %v, want fenced.jobs.enqueued", g.metrics)
	}
}
