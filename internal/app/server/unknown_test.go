package server

import (
	"net/url"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// TestLostReplyIsUnknownOutcome: a write whose database reply was lost with
// its connection (a failover, a crash) answers 503 unknown_outcome, neither
// success nor stale_fence; it did commit here, and the same owner's acquire
// made again keeps its fence.
func TestLostReplyIsUnknownOutcome(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	p := testdb.NewProxy(t, u.Host)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("pool_max_conns", "1") // one connection, its statements prepared by the first acquire
	u.RawQuery = q.Encode()
	e := setup(t, u.String(), Config{})
	if r := e.do("POST", "/v1/leases/warm/acquire", map[string]any{"owner": "A"}); r.status != 200 {
		t.Fatalf("acquire: %d %s", r.status, r.raw)
	}
	p.CutNextReply()
	r := e.do("POST", "/v1/leases/report/acquire", map[string]any{"owner": "A"})
	if r.status != 503 || r.body["error"] != codeUnknownOutcome {
		t.Fatalf("acquire whose reply was lost: %d %s, want 503 %s", r.status, r.raw, codeUnknownOutcome)
	}
	if r := e.do("GET", "/v1/leases/report", nil); r.status != 200 || r.body["owner"] != "A" || r.body["fence"] != 1.0 {
		t.Fatalf("the lease after the lost reply: %d %s, want held by A with fence 1", r.status, r.raw)
	}
	if r := e.do("POST", "/v1/leases/report/acquire", map[string]any{"owner": "A"}); r.status != 200 || r.body["fence"] != 1.0 {
		t.Fatalf("acquire again: %d %s, want fence 1", r.status, r.raw)
	}
}
