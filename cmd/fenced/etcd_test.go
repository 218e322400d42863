package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/fenced/fenced/internal/test/testetcd"
)

// etcdCluster is a three-member etcd cluster embedded in the test process,
// started by the first test that needs it and stopped by TestMain.
var etcdCluster struct {
	once sync.Once
	c    *testetcd.Cluster
	dir  string
	err  error
}

// etcdURL is an etcd:// URL with a fresh prefix on the shared cluster.
func etcdURL(t *testing.T) string {
	t.Helper()
	etcdCluster.once.Do(func() {
		if etcdCluster.dir, etcdCluster.err = os.MkdirTemp("", "fenced-cli-etcd-"); etcdCluster.err == nil {
			etcdCluster.c, etcdCluster.err = testetcd.Start(etcdCluster.dir, 3)
		}
	})
	if etcdCluster.err != nil {
		t.Fatalf("start etcd: %v", etcdCluster.err)
	}
	return etcdCluster.c.URL()
}

// stopEtcd stops the cluster if a test started it.
func stopEtcd() {
	if etcdCluster.c != nil {
		etcdCluster.c.Close()
	}
	if etcdCluster.dir != "" {
		os.RemoveAll(etcdCluster.dir)
	}
}

// The lease, resource and fence commands work on etcd; the job commands
// say clearly that etcd keeps no jobs.
func TestEtcdCommands(t *testing.T) {
	t.Parallel()
	c := newCLI(t, etcdURL(t))
	var l leaseOutput
	c.json(&l, "lease", "acquire", "job", "--owner", "A", "--ttl", "30s", "--json")
	if l.Fence != 1 || !l.Held || l.Owner != "A" {
		t.Fatalf("acquire: %+v", l)
	}
	contains(t, "held", c.fails(exitHeld, "lease", "acquire", "job", "--owner", "B").stderr, `held by "A"`)
	contains(t, "sub-second ttl", c.fails(exitUsage, "lease", "acquire", "other", "--owner", "A", "--ttl", "1500ms").stderr, "whole seconds")
	c.json(&l, "lease", "renew", "job", "--owner", "A", "--fence", "1", "--ttl", "1m", "--json")
	if l.Fence != 1 || !l.Held {
		t.Fatalf("renew: %+v", l)
	}
	c.ok("resource", "write", "invoice", "--fence", "1", "--value", "draft")
	c.fails(exitStale, "resource", "write", "invoice", "--fence", "0", "--value", "late")
	contains(t, "resource show", c.ok("resource", "show", "invoice"), "draft")
	c.ok("lease", "release", "job", "--owner", "A", "--fence", "1")
	if got := showLease(c, "job"); got.Held || !got.Released || got.Fence != 1 {
		t.Fatalf("after release: %+v", got)
	}
	out := c.ok("lease", "run", "job", "--owner", "me", "--ttl", "5s", "--", "sh", "-c", `echo "fence=$FENCED_FENCE"`)
	contains(t, "lease run", out, "fence=2")
	contains(t, "fence advance", c.ok("fence", "advance", "--by", "100", "--yes"), "new floor")
	c.json(&l, "lease", "acquire", "job", "--owner", "A", "--ttl", "2s", "--json")
	if l.Fence != 103 {
		t.Fatalf("acquire after an advance by 100 from fence 2: fence %d, want 103", l.Fence)
	}
	for _, args := range [][]string{{"job", "enqueue", "email"}, {"job", "list"}, {"job", "slots"}, {"semaphore", "ls"}} {
		r := c.fails(exitError, args...)
		if !strings.Contains(r.stderr, "not offered on etcd") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%s on etcd: stderr %q, want one line saying etcd keeps no jobs", strings.Join(args, " "), r.stderr)
		}
	}
}

// fenced serve on etcd: leases and resources over HTTP; the job routes
// answer 501 not_supported; no job maintenance runs.
func TestEtcdServe(t *testing.T) {
	t.Parallel()
	c := newCLI(t, etcdURL(t))
	s := c.serve()
	l := s.want(200, "POST", "/v1/leases/report/acquire", `{"owner": "w1", "ttl_ms": 2000}`)
	if l["fence"] != float64(1) {
		t.Fatalf("acquire = %v", l)
	}
	if got := s.want(400, "POST", "/v1/leases/other/acquire", `{"owner": "w1", "ttl_ms": 100}`); !strings.Contains(fmt.Sprint(got["message"]), "whole seconds") {
		t.Fatalf("acquire with 100 ms = %v", got)
	}
	if code, out, _ := s.call("PUT", "/v1/resources/report", `{"value": "v", "fence": 1}`); code != 200 {
		t.Fatalf("resource write: %d %v", code, out)
	}
	if code, out, _ := s.call("PUT", "/v1/resources/report", `{"value": "late", "fence": 0}`); code != 409 || out["error"] != "stale_fence" {
		t.Fatalf("stale resource write: %d %v", code, out)
	}
	j := s.want(501, "POST", "/v1/jobs", `{"kind": "email"}`)
	if j["error"] != "not_supported" || !strings.Contains(fmt.Sprint(j["message"]), "not offered on etcd") {
		t.Fatalf("enqueue on etcd = %v", j)
	}
	s.want(501, "POST", "/v1/queues/default/claim", `{"owner": "w1", "lease_ms": 30000}`)
	s.want(501, "GET", "/v1/slots", "")
	s.want(501, "GET", "/v1/semaphores", "")
	if code, out, _ := s.call("GET", "/healthz", ""); code != 200 || out["status"] != "ok" {
		t.Fatalf("healthz: %d %v", code, out) // no db_time: etcd has no clock to read
	}
	// The dashboard shows the etcd lease, and no job tables.
	resp, err := http.Get(s.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "report") || !strings.Contains(string(page), "w1") {
		t.Fatalf("dashboard on etcd: %d\n%s", resp.StatusCode, page)
	}
	s.stop()
	contains(t, "stderr", s.stderr.String(), "no job maintenance")
}
