package fencedtest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/fenced/fenced"
)

// Match narrows the jobs an assertion looks for beyond their kind. The
// zero value matches every job of the kind.
type Match struct {
	// Args, when non-nil, must equal the job's args as JSON values (a
	// struct, a map, json.RawMessage or []byte of JSON text): key order
	// and spacing do not matter.
	Args any
	// Queue, when set, must be the job's queue.
	Queue string
	// Priority, when non-nil, must be the job's priority.
	Priority *int
	// State, when set, must be the job's state.
	State fenced.JobState
	// Metadata, when non-nil, must equal the job's metadata as JSON values.
	Metadata any
	// Tags, when not empty, must each be among the job's tags (the job
	// may carry more).
	Tags []string
}

// Expected is one job RequireManyInserted expects: its kind and what else
// it must match.
type Expected struct {
	Kind  string
	Match Match
}

// mismatch says why j does not match m, or "" when it does.
func (m *Match) mismatch(j *fenced.Job) (string, error) {
	if m == nil {
		return "", nil
	}
	var why []string
	if m.Queue != "" && j.Queue != m.Queue {
		why = append(why, fmt.Sprintf("queue %q, not %q", j.Queue, m.Queue))
	}
	if m.Priority != nil && j.Priority != *m.Priority {
		why = append(why, fmt.Sprintf("priority %d, not %d", j.Priority, *m.Priority))
	}
	if m.State != "" && j.State != m.State {
		why = append(why, fmt.Sprintf("state %s, not %s", j.State, m.State))
	}
	for _, tag := range m.Tags {
		if !slices.Contains(j.Tags, tag) {
			why = append(why, fmt.Sprintf("tags %q, without %q", j.Tags, tag))
		}
	}
	for _, f := range []struct {
		name string
		want any
		got  json.RawMessage
	}{{"args", m.Args, j.Args}, {"metadata", m.Metadata, j.Metadata}} {
		if f.want == nil {
			continue
		}
		same, err := sameJSON(f.want, f.got)
		if err != nil {
			return "", fmt.Errorf("fencedtest: Match.%s: %w", strings.ToUpper(f.name[:1])+f.name[1:], err)
		}
		if !same {
			want, _ := encode(f.want)
			why = append(why, fmt.Sprintf("%s %s, not %s", f.name, f.got, want))
		}
	}
	return strings.Join(why, ", "), nil
}

// sameJSON reports whether want (a value, or JSON text) and got (JSON
// text) are the same JSON value.
func sameJSON(want any, got json.RawMessage) (bool, error) {
	wb, err := encode(want)
	if err != nil {
		return false, err
	}
	var w, g any
	if err := decode(wb, &w); err != nil {
		return false, err
	}
	if got == nil {
		return false, nil
	}
	if err := decode(got, &g); err != nil {
		return false, fmt.Errorf("the job's JSON %s: %w", got, err)
	}
	return reflect.DeepEqual(w, g), nil
}

func encode(v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return x, nil
	case []byte:
		return x, nil
	}
	return json.Marshal(v)
}

// decode reads JSON text into v (numbers as float64, so 1 and 1.0 are the
// same value).
func decode(b []byte, v *any) error { return json.Unmarshal(b, v) }
