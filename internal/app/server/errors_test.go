package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBadInput: every way a request can be malformed is a 4xx with a
// stable code and, for 400, the field at fault; never a 500, and nothing
// changes.
func TestBadInput(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{MaxBody: 4096})
		acquire := "/v1/leases/x/acquire"
		for _, c := range []struct {
			name, method, path string
			body               any
			status             int
			code, field        string
		}{
			{"MalformedJSON", "POST", acquire, `{"owner":`, 400, codeInvalid, "body"},
			{"MalformedJSONSyntax", "POST", acquire, `{"owner" "A"}`, 400, codeInvalid, "body"},
			{"UnknownField", "POST", acquire, `{"owner": "A", "ttl": 5}`, 400, codeInvalid, "ttl"},
			{"TrailingObject", "POST", acquire, `{"owner": "A"} {}`, 400, codeInvalid, "body"},
			{"TrailingGarbage", "POST", acquire, `{"owner": "A"}x`, 400, codeInvalid, "body"},
			{"ArrayBody", "POST", acquire, `[{"owner": "A"}]`, 400, codeInvalid, "body"},
			{"NullBody", "POST", acquire, `null`, 400, codeInvalid, "body"},
			{"EmptyBody", "POST", acquire, ``, 400, codeInvalid, "body"},
			{"WrongType", "POST", acquire, `{"owner": 5}`, 400, codeInvalid, "owner"},
			{"HugeNumber", "POST", acquire, `{"owner": "A", "ttl_ms": 1e400}`, 400, codeInvalid, "ttl_ms"},
			{"Int64Overflow", "POST", "/v1/leases/x/renew", `{"owner": "A", "fence": 9223372036854775808}`, 400, codeInvalid, "fence"},
			{"MaxInt64Millis", "POST", acquire, `{"owner": "A", "ttl_ms": 9223372036854775807}`, 400, codeInvalid, "ttl_ms"},
			{"NegativeMillis", "POST", acquire, `{"owner": "A", "ttl_ms": -9223372036854775808}`, 400, codeInvalid, "ttl_ms"},
			{"Fraction", "POST", "/v1/leases/x/renew", `{"owner": "A", "fence": 1.5}`, 400, codeInvalid, "fence"},
			{"HugeLimit", "POST", "/v1/queues/q/claim", `{"owner": "w", "limit": 99999999999999999999}`, 400, codeInvalid, "limit"},
			{"LimitOutOfRange", "POST", "/v1/queues/q/claim", `{"owner": "w", "limit": 1001}`, 400, codeInvalid, "limit"},
			{"NegativeWait", "POST", "/v1/queues/q/claim", `{"owner": "w", "wait_ms": -1}`, 400, codeInvalid, "wait_ms"},
			{"BadQueue", "POST", "/v1/queues/-q/claim", `{"owner": "w"}`, 400, codeInvalid, "queue"},
			{"HugePriority", "POST", "/v1/jobs", `{"kind": "k", "priority": 1e30}`, 400, codeInvalid, "priority"},
			{"PriorityOutOfRange", "POST", "/v1/jobs", `{"kind": "k", "priority": 10001}`, 400, codeInvalid, "priority"},
			{"NoKind", "POST", "/v1/jobs", `{}`, 400, codeInvalid, "kind"},
			{"ArgsNotJSONNumberRange", "POST", "/v1/jobs", `{"kind": "k", "args": {"n": 1e1000000}}`, 400, codeInvalid, "args"},
			{"ArgsWithNUL", "POST", "/v1/jobs", `{"kind": "k", "args": {"s": "a\u0000"}}`, 400, codeInvalid, "body"},
			{"ArgsWithLoneSurrogate", "POST", "/v1/jobs", `{"kind": "k", "args": ["\udfff"]}`, 400, codeInvalid, "body"},
			{"IdempotencyKeyTooLong", "POST", "/v1/jobs", `{"kind": "k", "idempotency_key": "` + strings.Repeat("k", 201) + `"}`, 400, codeInvalid, "idempotency_key"},
			{"NameTooLong", "POST", "/v1/leases/" + strings.Repeat("n", 201) + "/acquire", `{"owner": "A"}`, 400, codeInvalid, "name"},
			{"OutputOutOfRange", "POST", "/v1/jobs/1/complete", `{"fence": 1, "output": -1e999}`, 400, codeInvalid, "output"},
			{"CountersNotNumbers", "POST", "/v1/jobs/1/progress", `{"fence": 1, "counters": {"a": "b"}}`, 400, codeInvalid, "counters"},
			{"JobIDNotANumber", "GET", "/v1/jobs/abc", nil, 400, codeInvalid, "id"},
			{"JobIDZero", "POST", "/v1/jobs/0/complete", `{"fence": 1}`, 400, codeInvalid, "id"},
			{"JobIDOverflow", "GET", "/v1/jobs/99999999999999999999", nil, 400, codeInvalid, "id"},
			{"UnknownQueryParameter", "GET", "/v1/jobs?status=queued", nil, 400, codeInvalid, "status"},
			{"RepeatedQueryParameter", "GET", "/v1/jobs?queue=a&queue=b", nil, 400, codeInvalid, "queue"},
			{"BadState", "GET", "/v1/jobs?state=done", nil, 400, codeInvalid, "state"},
			{"BadLimit", "GET", "/v1/jobs?limit=ten", nil, 400, codeInvalid, "limit"},
			{"ZeroLimit", "GET", "/v1/jobs?limit=0", nil, 400, codeInvalid, "limit"},
			{"LimitTooLarge", "GET", "/v1/jobs?limit=1001", nil, 400, codeInvalid, "limit"},
			{"NegativeAfter", "GET", "/v1/jobs?after=-1", nil, 400, codeInvalid, "after"},
			{"UnknownRoute", "GET", "/v1/nope", nil, 404, codeNotFound, ""},
			{"UnknownRootPath", "GET", "/", nil, 404, codeNotFound, ""},
			{"UnknownAPIVersion", "GET", "/v2/leases", nil, 404, codeNotFound, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.fails(c.status, c.code, c.method, c.path, c.body)
				if c.field != "" && r.body["field"] != c.field {
					t.Fatalf("field %v, want %q: %s", r.body["field"], c.field, r.raw)
				}
				if r.header.Get(HeaderDBTime) != "" {
					t.Fatalf("an answer the database did not decide carries %s", HeaderDBTime)
				}
			})
		}
		t.Run("MethodNotAllowed", func(t *testing.T) {
			r := e.fails(http.StatusMethodNotAllowed, codeMethodNotAllowed, "DELETE", "/v1/leases/x", nil)
			if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
				t.Fatalf("Allow = %q", allow)
			}
			r = e.fails(http.StatusMethodNotAllowed, codeMethodNotAllowed, "GET", "/v1/leases/x/acquire", nil)
			if allow := r.header.Get("Allow"); allow != "POST" {
				t.Fatalf("Allow = %q", allow)
			}
		})
		t.Run("BodyOverTheLimitIs413", func(t *testing.T) {
			big := `{"kind": "k", "args": "` + strings.Repeat("a", 5000) + `"}`
			e.fails(http.StatusRequestEntityTooLarge, codeTooLarge, "POST", "/v1/jobs", big)
			// Without a Content-Length the limit holds while reading.
			req, _ := http.NewRequest("POST", e.ts.URL+"/v1/jobs", io.MultiReader(strings.NewReader(big)))
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = -1
			res, err := e.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("chunked body over the limit: %d", res.StatusCode)
			}
		})
		t.Run("NotJSONIs415", func(t *testing.T) {
			e.fails(http.StatusUnsupportedMediaType, codeUnsupportedType, "POST", acquire, `{"owner": "A"}`, "Content-Type", "text/plain")
			e.fails(http.StatusUnsupportedMediaType, codeUnsupportedType, "POST", acquire, `owner=A`, "Content-Type", "application/x-www-form-urlencoded")
			e.ok("POST", acquire, `{"owner": "A"}`) // application/json
			r := e.do("POST", acquire, `{"owner": "A"}`, "Content-Type", "application/json; charset=utf-8")
			if r.status != 200 {
				t.Fatalf("with a charset: %d %s", r.status, r.raw)
			}
		})
		t.Run("NothingChanged", func(t *testing.T) {
			var page struct {
				Jobs []any `json:"jobs"`
			}
			if e.decode(e.ok("GET", "/v1/jobs", nil), &page); len(page.Jobs) != 0 {
				t.Fatalf("bad input enqueued %d jobs", len(page.Jobs))
			}
		})
	})
}
