package fenced

// Fuzz tests of the input validators (issue 5, "Bad input at every
// boundary"). Each target checks the validator against an independent
// statement of its rule, that a rejection is an *InvalidError matching
// ErrInvalid, and that a value it accepts goes through the real statements of
// every reachable backend without a database error: whatever the validator
// lets through must not fail later "for validation reasons" (a CHECK, a
// column type, an encoding).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fenced/fenced/internal/test/testdb"
)

// fuzzBackend is one migrated backend that a fuzz target writes to.
type fuzzBackend struct {
	name string
	c    *Client
}

// fuzzBackends opens SQLite always, and PostgreSQL and MySQL/MariaDB when
// they answer (under CI=true they are required).
func fuzzBackends(f *testing.F) []fuzzBackend {
	f.Helper()
	urls := []struct{ name, url string }{{"sqlite", testdb.SQLite(f)}}
	if os.Getenv("CI") == "true" || reachable(testdb.PostgresURL()) {
		urls = append(urls, struct{ name, url string }{"postgres", testdb.Postgres(f)})
	} else {
		f.Logf("PostgreSQL unreachable: fuzzing without it")
	}
	if os.Getenv("CI") == "true" || reachable(testdb.MySQLURL()) {
		urls = append(urls, struct{ name, url string }{"mysql", testdb.MySQL(f)})
	} else {
		f.Logf("MySQL unreachable: fuzzing without it")
	}
	var out []fuzzBackend
	for _, u := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := Open(ctx, u.url, Config{})
		if err != nil {
			cancel()
			f.Fatalf("open %s: %v", u.name, err)
		}
		f.Cleanup(func() { c.Close() })
		if _, err := c.Migrate(ctx); err != nil {
			cancel()
			f.Fatalf("migrate %s: %v", u.name, err)
		}
		cancel()
		out = append(out, fuzzBackend{u.name, c})
	}
	return out
}

func reachable(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := Open(ctx, url, Config{})
	if err != nil {
		return false
	}
	defer c.Close()
	_, err = c.DatabaseTime(ctx)
	return err == nil
}

func fuzzCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantInvalid checks that err is an *InvalidError for field matching
// ErrInvalid.
func wantInvalid(t *testing.T, err error, field, what string) {
	t.Helper()
	var inv *InvalidError
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &inv) {
		t.Fatalf("%s: error %v (%T) does not wrap ErrInvalid", what, err, err)
	}
	if inv.Field != field || inv.Reason == "" {
		t.Fatalf("%s: error %v names field %q (want %q) with reason %q", what, err, inv.Field, field, inv.Reason)
	}
}

// wantNoDBError fails when an accepted input made a statement fail.
func wantNoDBError(t *testing.T, err error, backend, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s on %s: accepted input failed in the database: %v", what, backend, err)
	}
}

// nameRule is the documented rule for names, stated independently of
// validName: 1–200 bytes of UTF-8 without control characters.
func nameRule(s string) bool {
	if len(s) < 1 || len(s) > MaxNameBytes || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

func addNameSeeds(f *testing.F) {
	for _, s := range []string{
		"", "a", "job", " ", "a b", "trailing ", " leading", "ümlaut", "日本語", "🙂", "\u00a0", "\u200b", "\ufeff",
		"\ufffd", "\U0010ffff", "\uffff", "a\x00b", "\x7f", "\u0085", "tab\there", "nl\n", "\xff", "\xc3", "\xed\xa0\x80",
		"Robert'); DROP TABLE fenced_leases;--", `"quoted"`, `back\slash`, "%_", "?", "$1",
		strings.Repeat("n", 199), strings.Repeat("n", 200), strings.Repeat("n", 201),
		strings.Repeat("é", 100), strings.Repeat("é", 100) + "x", strings.Repeat("🙂", 50), strings.Repeat("🙂", 50) + "x",
		"A", "a", // no case folding: distinct names
	} {
		f.Add(s)
	}
}

// FuzzValidName: validName accepts exactly the documented names, rejects the
// rest with ErrInvalid, and an accepted name round-trips through every
// statement that takes a name-like field, byte for byte.
func FuzzValidName(f *testing.F) {
	addNameSeeds(f)
	backends := fuzzBackends(f)
	f.Fuzz(func(t *testing.T, s string) {
		err := validName("lease name", s)
		if ok := nameRule(s); ok != (err == nil) {
			t.Fatalf("validName(%q) = %v; the rule says accept=%v", s, err, ok)
		}
		if err != nil {
			wantInvalid(t, err, "lease name", fmt.Sprintf("validName(%q)", s))
			if strings.Contains(err.Error(), "\x00") {
				t.Fatalf("error message carries a NUL: %q", err)
			}
			return
		}
		ctx := fuzzCtx(t)
		for _, b := range backends {
			// Owner = name: names are never taken by another owner here.
			l, err := b.c.AcquireLease(ctx, s, s, time.Minute)
			wantNoDBError(t, err, b.name, fmt.Sprintf("Acquire(%q)", s))
			if l.Name != s || l.Owner != s {
				t.Fatalf("%s: Acquire(%q) returned name %q owner %q", b.name, s, l.Name, l.Owner)
			}
			got, err := b.c.GetLease(ctx, s)
			wantNoDBError(t, err, b.name, fmt.Sprintf("Get(%q)", s))
			if got.Name != s || got.Owner != s || got.Fence != l.Fence {
				t.Fatalf("%s: Get(%q) = %+v, acquired %+v", b.name, s, got, l)
			}
			err = b.c.LeaseTx(ctx, *l, func(Tx) error { return nil })
			wantNoDBError(t, err, b.name, fmt.Sprintf("LeaseTx(%q)", s))
			_, err = b.c.RenewLease(ctx, *l, time.Minute)
			wantNoDBError(t, err, b.name, fmt.Sprintf("Renew(%q)", s))
			_, err = b.c.ReleaseLease(ctx, *l)
			wantNoDBError(t, err, b.name, fmt.Sprintf("Release(%q)", s))

			_, err = b.c.WriteResource(ctx, s, []byte(s), 0, WriteOptions{OperationID: s})
			wantNoDBError(t, err, b.name, fmt.Sprintf("WriteResource(%q)", s))
			r, err := b.c.ReadResource(ctx, s)
			wantNoDBError(t, err, b.name, fmt.Sprintf("ReadResource(%q)", s))
			if r.Key != s {
				t.Fatalf("%s: ReadResource(%q) key %q", b.name, s, r.Key)
			}

			j, _, err := b.c.Enqueue(ctx, EnqueueParams{Kind: s, IdempotencyKey: s})
			wantNoDBError(t, err, b.name, fmt.Sprintf("Enqueue(kind=key=%q)", s))
			if j.Kind != s || j.IdempotencyKey != s {
				t.Fatalf("%s: Enqueue(%q) stored kind %q key %q", b.name, s, j.Kind, j.IdempotencyKey)
			}
			_, err = b.c.ListJobs(ctx, JobFilter{Kind: s, Limit: 1})
			wantNoDBError(t, err, b.name, fmt.Sprintf("ListJobs(kind=%q)", s))
			_, err = b.c.ClaimJobs(ctx, "fuzz-none", s, 1, time.Second)
			wantNoDBError(t, err, b.name, fmt.Sprintf("ClaimJobs(owner=%q)", s))
		}
	})
}

// FuzzValidTTL: accepted iff MinTTL <= ttl <= MaxTTL; an accepted ttl is a
// valid acquire and renew, and the granted expiry is ttl after the decision.
func FuzzValidTTL(f *testing.F) {
	for _, n := range []int64{math.MinInt64, -1, 0, 1, int64(time.Microsecond), int64(time.Millisecond) - 1,
		int64(time.Millisecond), int64(time.Millisecond) + 1, int64(1500 * time.Microsecond), int64(time.Second),
		int64(MaxTTL) - 1, int64(MaxTTL), int64(MaxTTL) + 1, math.MaxInt64} {
		f.Add(n)
	}
	backends := fuzzBackends(f)
	f.Fuzz(func(t *testing.T, n int64) {
		ttl := time.Duration(n)
		err := validTTL(ttl)
		if ok := ttl >= time.Millisecond && ttl <= 24*time.Hour; ok != (err == nil) {
			t.Fatalf("validTTL(%v) = %v; want accept=%v", ttl, err, ok)
		}
		if err != nil {
			wantInvalid(t, err, "ttl", fmt.Sprintf("validTTL(%v)", ttl))
			return
		}
		ctx := fuzzCtx(t)
		for _, b := range backends {
			l, err := b.c.AcquireLease(ctx, "ttl", "fuzz", ttl)
			wantNoDBError(t, err, b.name, fmt.Sprintf("Acquire(ttl=%v)", ttl))
			// The databases keep microseconds (SQLite: the clock has
			// milliseconds); allow for rounding of a sub-microsecond ttl.
			if d := l.ExpiresAt.Sub(l.DecidedAt) - ttl; d < -time.Millisecond || d > time.Millisecond {
				t.Fatalf("%s: Acquire(ttl=%v) expires %v after the decision", b.name, ttl, l.ExpiresAt.Sub(l.DecidedAt))
			}
			if _, err := b.c.RenewLease(ctx, *l, ttl); err != nil && !errors.Is(err, ErrStale) {
				// A 1 ms lease may expire before the renew: stale, not invalid.
				wantNoDBError(t, err, b.name, fmt.Sprintf("Renew(ttl=%v)", ttl))
			}
			if _, err := b.c.ReleaseLease(ctx, *l); err != nil && !errors.Is(err, ErrStale) {
				wantNoDBError(t, err, b.name, "Release")
			}
		}
	})
}

// FuzzValidRef: validRef accepts iff name and owner are names and the fence
// is not negative, reporting the first bad field; an accepted reference
// reaches the database and gets a lease answer (not found or stale), never a
// database error.
func FuzzValidRef(f *testing.F) {
	f.Add("job", "A", int64(1))
	f.Add("job", "A", int64(0))
	f.Add("job", "A", int64(-1))
	f.Add("", "A", int64(1))
	f.Add("job", "", int64(1))
	f.Add("job", "\xff", int64(math.MaxInt64))
	f.Add("a\x00", "A", int64(math.MinInt64))
	f.Add(strings.Repeat("x", 200), strings.Repeat("y", 200), int64(math.MaxInt64))
	backends := fuzzBackends(f)
	f.Fuzz(func(t *testing.T, name, owner string, fence int64) {
		err := validRef(Lease{Name: name, Owner: owner, Fence: fence})
		switch {
		case !nameRule(name):
			wantInvalid(t, err, "lease name", "validRef")
		case !nameRule(owner):
			wantInvalid(t, err, "owner", "validRef")
		case fence < 0:
			wantInvalid(t, err, "fence", "validRef")
		case err != nil:
			t.Fatalf("validRef(%q, %q, %d) = %v; want accepted", name, owner, fence, err)
		}
		if err := validFence(fence); (err == nil) != (fence >= 0) {
			t.Fatalf("validFence(%d) = %v", fence, err)
		} else if err != nil {
			wantInvalid(t, err, "fence", "validFence")
		}
		if err != nil {
			return
		}
		ctx := fuzzCtx(t)
		lease := func(err error) bool {
			return err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrStale)
		}
		for _, b := range backends {
			l := Lease{Name: name, Owner: owner, Fence: fence}
			if _, err := b.c.RenewLease(ctx, l, time.Second); !lease(err) {
				t.Fatalf("%s: Renew(%q, %q, %d): %v", b.name, name, owner, fence, err)
			}
			if _, err := b.c.ReleaseLease(ctx, l); !lease(err) {
				t.Fatalf("%s: Release(%q, %q, %d): %v", b.name, name, owner, fence, err)
			}
			if err := b.c.LeaseTx(ctx, l, func(Tx) error { return nil }); !lease(err) {
				t.Fatalf("%s: LeaseTx(%q, %q, %d): %v", b.name, name, owner, fence, err)
			}
			// Any fence >= 0 is a valid resource write; a lower one than
			// stored is stale.
			if _, err := b.c.WriteResource(ctx, "fence-fuzz", []byte("v"), fence, WriteOptions{}); err != nil && !errors.Is(err, ErrStale) {
				t.Fatalf("%s: WriteResource(fence=%d): %v", b.name, fence, err)
			}
		}
	})
}

// argsMode says how FuzzEnqueueParams passes its args bytes.
const (
	argsNil = iota
	argsRaw
	argsBytes
	argsString // a Go string, marshalled
	argsMap    // a map holding the string, marshalled
	argsModes
)

// FuzzEnqueueParams: EnqueueParams.validate accepts exactly the documented
// parameters, fills the defaults, and rejects with ErrInvalid; args that
// are not valid JSON or over MaxArgsBytes are rejected; accepted parameters
// enqueue on every backend and read back equal.
func FuzzEnqueueParams(f *testing.F) {
	type seed struct {
		kind, queue        string
		priority, attempts int
		delay, runAt       int64
		key                string
		args               []byte
		mode               uint8
		pad                uint32
	}
	big := strings.Repeat("x", MaxArgsBytes)
	for _, s := range []seed{
		{kind: "email", args: []byte(`{"to":"a@b"}`), mode: argsRaw},
		{kind: "email", mode: argsNil},
		{kind: "", args: []byte(`{}`), mode: argsRaw},
		{kind: "k", queue: "q.1:a-b_c", priority: MaxPriority, attempts: MaxAttemptsLimit, args: []byte(`[]`), mode: argsBytes},
		{kind: "k", queue: "-bad", args: []byte(`1`), mode: argsRaw},
		{kind: "k", queue: strings.Repeat("q", 100), args: []byte(`null`), mode: argsRaw},
		{kind: "k", queue: strings.Repeat("q", 101), args: []byte(`null`), mode: argsRaw},
		{kind: "k", priority: -1, mode: argsNil},
		{kind: "k", priority: MaxPriority + 1, mode: argsNil},
		{kind: "k", attempts: -1, mode: argsNil},
		{kind: "k", attempts: MaxAttemptsLimit + 1, mode: argsNil},
		{kind: "k", delay: -1, mode: argsNil},
		{kind: "k", delay: int64(10 * 365 * 24 * time.Hour), mode: argsNil},
		{kind: "k", delay: int64(10*365*24*time.Hour) + 1, mode: argsNil},
		{kind: "k", runAt: time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC).Unix(), mode: argsNil},
		{kind: "k", runAt: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), mode: argsNil},
		{kind: "k", runAt: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix(), mode: argsNil},
		{kind: "k", runAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), mode: argsNil},
		{kind: "k", runAt: math.MaxInt64, mode: argsNil},
		{kind: "k", key: "idem", args: []byte(`{"a":1}`), mode: argsRaw},
		{kind: "k", key: "\xff", mode: argsNil},
		{kind: "k", args: []byte(`{`), mode: argsRaw},
		{kind: "k", args: []byte(``), mode: argsRaw},
		{kind: "k", args: []byte(``), mode: argsBytes},
		{kind: "k", args: []byte(`{"a":1} {"b":2}`), mode: argsRaw},
		{kind: "k", args: []byte(` {"a": [1, 2.5e3, -0, true, false, null, "\u00e9"]} `), mode: argsRaw},
		{kind: "k", args: []byte("\xff\xfe"), mode: argsString},
		{kind: "k", args: []byte("plain text"), mode: argsMap},
		{kind: "k", args: []byte(`{}`), mode: argsRaw, pad: MaxArgsBytes - 2},
		{kind: "k", args: []byte(`{}`), mode: argsRaw, pad: MaxArgsBytes - 1},
		{kind: "k", args: []byte(big[:MaxArgsBytes-2]), mode: argsString},
		{kind: "k", args: []byte(big[:MaxArgsBytes-1]), mode: argsString},
		{kind: "k", args: []byte(`"<>&\u2028"`), mode: argsRaw},
		{kind: "k", args: []byte("{\"a\":\"\x01\"}"), mode: argsRaw}, // raw control char in a string: invalid JSON
		// Valid JSON to encoding/json that a database may refuse.
		{kind: "k", args: []byte(`"\u0000"`), mode: argsRaw},
		{kind: "k", args: []byte(`"\ud800"`), mode: argsRaw},
		{kind: "k", args: []byte("\"\xff\""), mode: argsRaw},
		{kind: "k", args: []byte(`1e1000000`), mode: argsRaw},
		{kind: "k", args: []byte(`1e400`), mode: argsRaw},
		{kind: "k", args: []byte(`{"b":1.10,"a":2,"b":3}`), mode: argsRaw}, // PostgreSQL's jsonb keeps one "b"
		{kind: "k", args: []byte(`{"a":{"x":1,"\u0078":2}}`), mode: argsRaw},
		{kind: "k", args: []byte(strings.Repeat("[", 32) + strings.Repeat("]", 32)), mode: argsRaw},
		{kind: "k", args: []byte(strings.Repeat("[", 33) + strings.Repeat("]", 33)), mode: argsRaw},
		{kind: "k", args: []byte(strings.Repeat("[", 101) + strings.Repeat("]", 101)), mode: argsRaw},
		{kind: "k", args: []byte(strings.Repeat("[", 1001) + strings.Repeat("]", 1001)), mode: argsRaw},
		{kind: "k", key: " ", mode: argsNil},
	} {
		f.Add(s.kind, s.queue, s.priority, s.attempts, s.delay, s.runAt, s.key, s.args, s.mode, s.pad)
	}
	backends := fuzzBackends(f)
	f.Fuzz(func(t *testing.T, kind, queue string, priority, attempts int, delay, runAt int64, key string, raw []byte, mode uint8, pad uint32) {
		p := EnqueueParams{Kind: kind, Queue: queue, Priority: priority, MaxAttempts: attempts,
			Delay: time.Duration(delay), IdempotencyKey: key}
		if runAt != 0 {
			p.RunAt = time.Unix(runAt, 0).UTC()
		}
		// Trailing spaces keep valid JSON valid and let the fuzzer reach the
		// size limit.
		pad %= 2 * MaxArgsBytes
		wantArgs := []byte("{}")
		argsOK := true
		switch mode % argsModes {
		case argsNil:
		case argsRaw, argsBytes:
			b := append(bytes.Clone(raw), bytes.Repeat([]byte(" "), int(pad))...)
			if mode%argsModes == argsRaw {
				p.Args = json.RawMessage(b)
			} else {
				p.Args = b
			}
			wantArgs, argsOK = b, len(b) <= MaxArgsBytes && json.Valid(b) && storableRule(b)
		case argsString, argsMap:
			var v any = string(raw)
			if mode%argsModes == argsMap {
				v = map[string]any{"s": string(raw), "n": len(raw)}
			}
			p.Args = v
			var err error
			if wantArgs, err = json.Marshal(v); err != nil {
				t.Fatalf("marshal: %v", err)
			}
			argsOK = len(wantArgs) <= MaxArgsBytes && storableRule(wantArgs)
		}

		// The rule, field by field, in validate's order.
		wantQueue := queue
		if wantQueue == "" {
			wantQueue = DefaultQueue
		}
		wantAttempts := attempts
		if wantAttempts == 0 {
			wantAttempts = DefaultMaxAttempts
		}
		var field string
		switch {
		case !nameRule(kind):
			field = "kind"
		case !queueRule(wantQueue):
			field = "queue"
		case priority < 0 || priority > MaxPriority:
			field = "priority"
		case wantAttempts < 1 || wantAttempts > MaxAttemptsLimit:
			field = "max_attempts"
		case delay < 0 || time.Duration(delay) > 10*365*24*time.Hour:
			field = "delay"
		case runAt != 0 && (p.RunAt.Year() < 2000 || p.RunAt.Year() > 9999):
			field = "run_at"
		case key != "" && !nameRule(key):
			field = "idempotency key"
		case !argsOK:
			field = "args"
		}
		out, err := p.validate()
		if field != "" {
			wantInvalid(t, err, field, "validate")
			if field == "args" {
				_, jerr := jsonArg("args", p.Args, []byte("{}"))
				wantInvalid(t, jerr, "args", "jsonArg")
			}
			return
		}
		if err != nil {
			t.Fatalf("validate(%+v) = %v; want accepted", p, err)
		}
		if out.Queue != wantQueue || out.MaxAttempts != wantAttempts || out.Kind != kind || out.Priority != priority ||
			out.IdempotencyKey != key || !bytes.Equal(out.Args, wantArgs) {
			t.Fatalf("validate(%+v) = %+v; want queue %q, max attempts %d, args %q", p, out, wantQueue, wantAttempts, wantArgs)
		}

		ctx := fuzzCtx(t)
		for _, b := range backends {
			res, err := b.c.EnqueueMany(ctx, nil, []EnqueueParams{p})
			wantNoDBError(t, err, b.name, fmt.Sprintf("Enqueue(kind %q queue %q key %q args %.300q)", kind, out.Queue, key, out.Args))
			j := res[0].Job
			if res[0].Existing {
				continue // an earlier input used the same idempotency key
			}
			if j.Kind != kind || j.Queue != wantQueue || j.Priority != priority || j.MaxAttempts != wantAttempts ||
				j.IdempotencyKey != key || (runAt != 0 && !j.RunAt.Equal(p.RunAt)) {
				t.Fatalf("%s: enqueued %+v, read back %+v", b.name, out, j)
			}
			if !sameJSON(t, j.Args, out.Args) {
				t.Fatalf("%s: args %.300q read back as %.300q", b.name, out.Args, j.Args)
			}
		}
	})
}

// FuzzJSONArg: jsonArg takes JSON text as is when it is valid and at most
// MaxArgsBytes, marshals other values, and gives the default for nil.
func FuzzJSONArg(f *testing.F) {
	for _, s := range []string{``, `{}`, `null`, `"x"`, `{"a":`, `[1,2]`, `1e1000000`, `"\u0000"`, `"\ud800"`,
		"\"\xff\"", `{"a":1,"a":2}`, strings.Repeat("[", 1001) + strings.Repeat("]", 1001), " \t\n{}\r\n", "\xef\xbb\xbf{}"} {
		f.Add([]byte(s), uint32(0))
	}
	f.Add([]byte(`{}`), uint32(MaxArgsBytes-2))
	f.Add([]byte(`{}`), uint32(MaxArgsBytes-1))
	f.Fuzz(func(t *testing.T, raw []byte, pad uint32) {
		pad %= 2 * MaxArgsBytes
		b := append(bytes.Clone(raw), bytes.Repeat([]byte("\n"), int(pad))...)
		want := len(b) <= MaxArgsBytes && json.Valid(b) && storableRule(b)
		for _, v := range []any{json.RawMessage(b), b} {
			got, err := jsonArg("args", v, nil)
			if (err == nil) != want {
				t.Fatalf("jsonArg(%T %q) = %v; want accept=%v", v, b, err, want)
			}
			if err != nil {
				wantInvalid(t, err, "args", "jsonArg")
			} else if !bytes.Equal(got, b) {
				t.Fatalf("jsonArg(%q) changed the text to %q", b, got)
			}
		}
		got, err := jsonArg("args", string(b), nil)
		m, _ := json.Marshal(string(b))
		if (err == nil) != (len(m) <= MaxArgsBytes && storableRule(m)) {
			t.Fatalf("jsonArg(string %q) = %v", b, err)
		}
		if err == nil && !json.Valid(got) {
			t.Fatalf("jsonArg(string) gave invalid JSON %q", got)
		}
		if def, err := jsonArg("args", nil, []byte("{}")); err != nil || string(def) != "{}" {
			t.Fatalf("jsonArg(nil) = %q, %v", def, err)
		}
		// Values JSON cannot encode are refused, not panicked on.
		for _, v := range []any{make(chan int), func() {}, math.NaN(), math.Inf(1), map[bool]int{true: 1}} {
			if _, err := jsonArg("args", v, nil); err == nil {
				t.Fatalf("jsonArg(%T) accepted an unencodable value", v)
			} else {
				wantInvalid(t, err, "args", fmt.Sprintf("jsonArg(%T)", v))
			}
		}
	})
}

func queueRule(q string) bool {
	if len(q) < 1 || len(q) > 100 {
		return false
	}
	for i, r := range q {
		alnum := r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if !alnum && (i == 0 || !strings.ContainsRune("_.:-", r)) {
			return false
		}
	}
	return true
}

// sameJSON reports whether two JSON texts hold the same value: the
// databases normalise (PostgreSQL jsonb sorts keys, drops duplicates and
// whitespace, writes 1e2 as 100).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	va, vb := decodeJSON(t, a), decodeJSON(t, b)
	return jsonEqual(va, vb)
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, _, ex := big.ParseFloat(string(x), 10, 256, big.ToNearestEven)
		fy, _, ey := big.ParseFloat(string(y), 10, 256, big.ToNearestEven)
		return ex == nil && ey == nil && fx.Cmp(fy) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a, b)
	}
}

// storableRule is the rule jsonArg applies beyond json.Valid, stated
// here on its own: every backend can store the text and reads it back as
// the same value (UTF-8, nesting at most MaxJSONDepth, no \u0000 escape,
// no unpaired surrogate escape, every number a finite float64 that does
// not round to zero, no key given twice in one object).
func storableRule(b []byte) bool {
	st := scanJSON(b)
	return utf8.Valid(b) && st.depth <= MaxJSONDepth && !st.nulEscape && !st.loneSurrogate && !st.badNumber &&
		!duplicateKey(b)
}

// duplicateKey reports, by encoding/json's tokens, whether valid UTF-8
// JSON text without unpaired surrogate escapes gives a key twice in one
// object (keys compared decoded).
func duplicateKey(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type object struct {
		keys    map[string]bool
		wantKey bool
	}
	var open []*object // nil for an array
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(open); n > 0 && open[n-1] != nil && open[n-1].wantKey {
			if tok == json.Delim('}') {
				open = open[:n-1]
				continue
			}
			k, _ := tok.(string)
			if open[n-1].keys[k] {
				return true
			}
			open[n-1].keys[k], open[n-1].wantKey = true, false
			continue
		}
		if n := len(open); n > 0 && open[n-1] != nil {
			open[n-1].wantKey = true // a value was read
		}
		switch tok {
		case json.Delim('{'):
			open = append(open, &object{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			open = append(open, nil)
		case json.Delim(']'):
			open = open[:len(open)-1]
		}
	}
}

type jsonStats struct {
	depth                               int
	nulEscape, loneSurrogate, badNumber bool
}

// scanJSON measures valid JSON text: maximum nesting depth, \u0000 escapes,
// unpaired surrogate escapes, and numbers beyond PostgreSQL numeric (more
// than 131072 integer digits or 16383 fractional digits).
func scanJSON(b []byte) jsonStats {
	var st jsonStats
	depth := 0
	hex4 := func(i int) (rune, bool) {
		if i+4 > len(b) {
			return 0, false
		}
		var r rune
		for _, c := range b[i : i+4] {
			switch {
			case c >= '0' && c <= '9':
				r = r*16 + rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r*16 + rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r*16 + rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '[' || c == '{':
			depth++
			st.depth = max(st.depth, depth)
			i++
		case c == ']' || c == '}':
			depth--
			i++
		case c == '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] != '\\' {
					i++
					continue
				}
				if i+1 < len(b) && b[i+1] == 'u' {
					r, _ := hex4(i + 2)
					i += 6
					switch {
					case r == 0:
						st.nulEscape = true
					case r >= 0xd800 && r < 0xdc00:
						if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
							if r2, ok := hex4(i + 2); ok && r2 >= 0xdc00 && r2 < 0xe000 {
								i += 6
								continue
							}
						}
						st.loneSurrogate = true
					case r >= 0xdc00 && r < 0xe000:
						st.loneSurrogate = true
					}
					continue
				}
				i += 2
			}
			i++
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(b) && strings.IndexByte("+-0123456789.eE", b[j]) >= 0 {
				j++
			}
			if !float64Number(string(b[i:j])) {
				st.badNumber = true
			}
			i = j
		default:
			i++
		}
	}
	return st
}

// float64Number: the number is a finite float64, and nonzero if any digit
// of its mantissa is.
func float64Number(num string) bool {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return false
	}
	mant, _, _ := strings.Cut(strings.ToLower(num), "e")
	return f != 0 || strings.Trim(mant, "-+0.") == ""
}
