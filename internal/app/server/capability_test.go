package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// coreOnly is a backend of the core contract alone (driver.Driver), as
// etcd is: no job queue, no semaphores, no clock read.
type coreOnly struct{ driver.Driver }

// setupCoreOnly serves a migrated SQLite database through coreOnly.
func setupCoreOnly(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	d, err := fenced.OpenDriver(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := fenced.New(d, fenced.Config{}).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := fenced.New(coreOnly{d}, fenced.Config{})
	srv, err := New(c, Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, srv: srv, ts: httptest.NewServer(srv)}
	t.Cleanup(func() { srv.Close(); e.ts.Close() })
	return e
}

// routePath is a request path of the route pattern p, and its method.
func routePath(p string) (method, path string) {
	method, path, _ = strings.Cut(p, " ")
	return method, strings.NewReplacer("{name}", "n", "{id}", "1", "{queue}", "q", "{kind}", "k", "{key}", "c").Replace(path)
}

// On a backend without the job queue and the semaphores, their routes
// answer 501 not_supported with the Client's error for the capability,
// whatever the request (the server decided at start), and no other route
// does; the lease and resource routes, the health check and the metrics
// work, the metrics without the gauges read from the job table.
func TestRoutesOfAMissingCapabilityAnswerNotSupported(t *testing.T) {
	t.Parallel()
	e := setupCoreOnly(t)
	for _, rt := range apiRoutes {
		method, path := routePath(rt.pattern)
		if rt.needs == "" {
			r, err := e.send(method, path, map[string]any{})
			if err != nil || r.status == http.StatusNotImplemented {
				t.Errorf("%s needs a capability it does not name: %v %s", rt.pattern, err, r.raw)
			}
			continue
		}
		r, err := e.send(method, path+"?bad=1", map[string]any{"not": "checked"})
		if err != nil {
			t.Fatal(err)
		}
		want := e.c.Unsupported(rt.needs).Error()
		if r.status != http.StatusNotImplemented || r.body["error"] != codeNotSupported || r.body["message"] != want {
			t.Errorf("%s without %s: %d %s, want 501 %s %q", rt.pattern, rt.needs, r.status, r.raw, codeNotSupported, want)
		}
	}
	e.ok("POST", "/v1/leases/n/acquire", map[string]any{"owner": "A"})
	if r, err := e.send("GET", "/healthz", nil); err != nil || r.status != http.StatusOK || r.body["status"] != "ok" || r.body["db_time"] != nil {
		t.Fatalf("healthz without a clock read = %v %s", err, r.raw)
	}
	metrics := string(e.ok("GET", "/metrics", nil).raw)
	if !strings.Contains(metrics, "fenced_lease_acquires_total") {
		t.Fatal("no lease metrics")
	}
	for _, gauge := range []string{"fenced_jobs", "fenced_key_slots_in_use", "fenced_jobs_held_back"} {
		if strings.Contains(metrics, "# HELP "+gauge+" ") {
			t.Errorf("a backend without jobs has the gauge %s", gauge)
		}
	}
}

// Every route marked with a capability is served where the backend has
// it: over SQLite, none of them answers 501, and over PostgreSQL none of
// those whose capability SQLite lacks (workflows, while SQLite has none).
func TestEveryMarkedRouteIsServedWhereTheCapabilityIs(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{})
	var pg *env
	for _, rt := range apiRoutes {
		if rt.needs == "" {
			continue
		}
		on, name := e, "SQLite"
		if e.c.Unsupported(rt.needs) != nil {
			if pg == nil {
				pg = setup(t, testdb.Postgres(t), Config{})
			}
			on, name = pg, "PostgreSQL"
		}
		method, path := routePath(rt.pattern)
		r, err := on.send(method, path, map[string]any{})
		if err != nil || r.status == http.StatusNotImplemented {
			t.Errorf("%s on %s: %v %d %s", rt.pattern, name, err, r.status, r.raw)
		}
	}
}

// The OpenAPI document gives 501 not_supported to exactly the routes that
// need a capability.
func TestOpenAPIDocumentsNotSupportedOnTheRoutesThatNeedACapability(t *testing.T) {
	t.Parallel()
	d := loadAPIDoc(t)
	for _, rt := range apiRoutes {
		method, path, _ := strings.Cut(rt.pattern, " ")
		op, err := d.operation(method, path)
		if err != nil {
			t.Fatal(err)
		}
		responses, _ := op["responses"].(map[string]any)
		if _, documented := responses["501"]; documented != (rt.needs != "") {
			t.Errorf("%s: 501 documented %v, but the route needs %q", rt.pattern, documented, rt.needs)
		}
	}
}
