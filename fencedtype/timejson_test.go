package fencedtype

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// timeForm is TimeLayout's form: UTC, six fractional digits.
var timeForm = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

func TestFormatTime(t *testing.T) {
	east := time.FixedZone("east", 5*3600)
	for _, c := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), "2026-11-29T12:00:00.000000Z"},
		{time.Date(2026, 11, 29, 12, 0, 0, 608_000_000, time.UTC), "2026-11-29T12:00:00.608000Z"}, // SQLite: ms
		{time.Date(2026, 11, 29, 12, 0, 0, 608_123_000, time.UTC), "2026-11-29T12:00:00.608123Z"}, // PostgreSQL, MySQL: µs
		{time.Date(2026, 11, 29, 12, 0, 0, 608_123_999, time.UTC), "2026-11-29T12:00:00.608123Z"}, // below a µs: dropped
		{time.Date(2026, 11, 29, 17, 0, 0, 1000, east), "2026-11-29T12:00:00.000001Z"},            // in UTC
	} {
		if got := FormatTime(c.in); got != c.want {
			t.Errorf("FormatTime(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

// encode is v's JSON as the HTTP service writes it (no HTML escaping),
// decoded into a map.
func encode(t *testing.T, v any) (string, map[string]any) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return b.String(), m
}

// TestEveryTimeFieldEncodesInTimeLayout walks the fields of each value: a
// time field (one added later included) must come out in TimeLayout, a nil
// one as null, and every other field as its tag says.
func TestEveryTimeFieldEncodesInTimeLayout(t *testing.T) {
	at := time.Date(2026, 11, 29, 17, 4, 5, 123_456_789, time.FixedZone("east", 5*3600))
	want := "2026-11-29T12:04:05.123456Z"
	for _, v := range []any{
		Lease{Name: "n", Owner: "<o&>", Fence: 3, ExpiresAt: at, Held: true, DecidedAt: at},
		Job{ID: 1, Kind: "k", Args: json.RawMessage(`{"a":1}`), State: JobRunning, RunAt: at, LeaseExpiresAt: &at,
			CreatedAt: at, AttemptedAt: &at, FinishedAt: &at, LastError: "<b>", DecidedAt: at},
		JobAttempt{Attempt: 1, Fence: 2, Owner: "w", StartedAt: at, EndedAt: &at, Outcome: OutcomeSucceeded},
		QueuePause{Queue: "q", PausedAt: at},
	} {
		out, m := encode(t, v)
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				if _, ok := m[f.Name]; ok {
					t.Errorf("%s.%s is tagged - but encoded", rt.Name(), f.Name)
				}
				continue
			}
			got, ok := m[name]
			if !ok {
				t.Errorf("%s: %s missing from %s", rt.Name(), name, out)
				continue
			}
			if f.Type == reflect.TypeOf(at) || f.Type == reflect.TypeOf(&at) {
				if got != want {
					t.Errorf("%s.%s = %v, want %s", rt.Name(), f.Name, got, want)
				}
			}
		}
		if strings.Contains(out, `\u003c`) {
			t.Errorf("%s escaped HTML the encoder did not ask to: %s", rt.Name(), out)
		}
	}

	// Absent times: a zero expiry is left out, nil pointers are null.
	_, m := encode(t, Lease{Name: "n"})
	if _, ok := m["expires_at"]; ok {
		t.Errorf("zero expires_at encoded: %v", m)
	}
	_, m = encode(t, Job{ID: 1, RunAt: at, CreatedAt: at})
	for _, k := range []string{"lease_expires_at", "attempted_at", "finished_at"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("nil %s encoded as %v (present %v), want null", k, v, ok)
		}
	}
	_, m = encode(t, JobAttempt{StartedAt: at})
	if v, ok := m["ended_at"]; !ok || v != nil {
		t.Errorf("nil ended_at encoded as %v", v)
	}
}

// A value in a slice or behind a pointer encodes the same way, and decodes
// back into the same time at microsecond precision.
func TestTimeLayoutRoundTrips(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 4, 5, 123_456_000, time.UTC)
	b, err := json.Marshal([]*Job{{ID: 7, RunAt: at, CreatedAt: at}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"run_at":"2026-11-29T12:04:05.123456Z"`) {
		t.Fatalf("encoded %s", b)
	}
	var back []*Job
	if err := json.Unmarshal(b, &back); err != nil || !back[0].RunAt.Equal(at) {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	if !timeForm.MatchString(FormatTime(at)) {
		t.Fatalf("%s does not match %s", FormatTime(at), timeForm)
	}
}
