package fenced

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// UniqueOptions make a job unique (EnqueueParams.Unique): at most one job
// of one unique key holds its slot at a time, and an enqueue that meets
// the holder returns it (existing) instead of adding a job. The key is
// always the job's kind, with the parts chosen here: all its args, some
// top-level keys of them, its queue, and the window of its RunAt. A job
// holds the slot while its state is one of ByState (its own, as stored at
// enqueue). Every backend enforces it with a unique index, in the
// statement that inserts the job, so two racing enqueues give one job,
// inside a caller's transaction (EnqueueTx) and within a batch
// (EnqueueMany, EnqueueBulk) too. See docs/design.md §6.16.
//
// Unlike IdempotencyKey, which lasts while its job exists, the slot is
// freed by the state changes that leave ByState (with the default states,
// a failure or a cancellation), and by deleting the job (a tidy of
// succeeded jobs past the retention window does).
type UniqueOptions struct {
	// ByArgs includes all the args in the key: canonical JSON, object
	// keys sorted at every depth, numbers as written (1 and 1.0 differ).
	ByArgs bool
	// ArgsKeys includes only these top-level keys of the args (which must
	// then be an object) in the key; a key the args lack counts as absent,
	// unlike one given as null. Setting it implies by args.
	ArgsKeys []string
	// ByPeriod includes the window of RunAt in the key: the jobs whose
	// run times fall in one window of ByPeriod (counted from the Unix
	// epoch, by the database clock when RunAt is zero) share a slot. A
	// whole number of seconds from 1 s to MaxUniquePeriod; 0: no window.
	ByPeriod time.Duration
	// ByQueue includes the queue in the key.
	ByQueue bool
	// ByState are the states in which a job holds its slot; default
	// DefaultUniqueStates. They must include queued and running: a job
	// could otherwise move back into the set (a failure retried, a lost
	// lease recovered) onto a slot another job took meanwhile.
	ByState []JobState
}

// MaxUniquePeriod is the longest UniqueOptions.ByPeriod.
const MaxUniquePeriod = 10 * 365 * 24 * time.Hour

// DefaultUniqueStates are the unique states when ByState is empty: a job
// holds its slot while it waits, runs and, once it succeeded, until it is
// deleted (the Maintainer's tidy deletes it after the retention window).
var DefaultUniqueStates = []JobState{JobQueued, JobRunning, JobSucceeded}

// Validate returns the *InvalidError an enqueue with these options returns.
func (u UniqueOptions) Validate() error {
	_, err := u.states()
	if err != nil {
		return err
	}
	if u.ByPeriod != 0 && (u.ByPeriod < time.Second || u.ByPeriod > MaxUniquePeriod || u.ByPeriod%time.Second != 0) {
		return fencedtype.Invalid("unique by period", "%s is not a whole number of seconds from 1s to %s", u.ByPeriod, MaxUniquePeriod)
	}
	seen := map[string]bool{}
	for _, k := range u.ArgsKeys {
		if err := validName("unique args key", k); err != nil {
			return err
		}
		if seen[k] {
			return fencedtype.Invalid("unique args keys", "name %q twice", k)
		}
		seen[k] = true
	}
	return nil
}

// states is the bitmask of u's states (driver.UniqueStateBit).
func (u UniqueOptions) states() (int, error) {
	states := u.ByState
	if len(states) == 0 {
		states = DefaultUniqueStates
	}
	mask := 0
	for _, s := range states {
		bit := driver.UniqueStateBit(s)
		if bit == 0 {
			return 0, fencedtype.Invalid("unique states", "%q is not a job state", s)
		}
		if mask&bit != 0 {
			return 0, fencedtype.Invalid("unique states", "name %s twice", s)
		}
		mask |= bit
	}
	if need := driver.UniqueStateBit(JobQueued) | driver.UniqueStateBit(JobRunning); mask&need != need {
		return 0, fencedtype.Invalid("unique states",
			"must include queued and running: a job moving back into them (a retried failure, a recovered lease) could collide with a job enqueued meanwhile")
	}
	return mask, nil
}

// fill validates u and sets out's unique fields from out's kind, queue and
// args (already validated).
func (u UniqueOptions) fill(out *driver.EnqueueParams) error {
	if err := u.Validate(); err != nil {
		return err
	}
	mask, _ := u.states()
	key, err := uniqueKey(u, out.Kind, out.Queue, out.Args)
	if err != nil {
		return err
	}
	out.UniqueKey, out.UniquePeriod, out.UniqueStates = key, int64(u.ByPeriod/time.Second), mask
	return nil
}

// uniqueKey is the sha256 of a canonical encoding of the key's parts, each
// length-prefixed: a version tag, the kind, the queue (or a marker of
// none), and the args (none, all canonical, or the chosen keys, each
// present with its canonical value or absent). The period is not in it:
// the database stores the window (the bucket) beside the key.
func uniqueKey(u UniqueOptions, kind, queue string, args []byte) ([]byte, error) {
	var b bytes.Buffer
	part := func(s []byte) {
		b.Write(binary.AppendUvarint(nil, uint64(len(s))))
		b.Write(s)
	}
	part([]byte("fenced unique v1"))
	part([]byte(kind))
	if u.ByQueue {
		part([]byte("q:" + queue))
	} else {
		part(nil)
	}
	switch {
	case len(u.ArgsKeys) > 0:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return nil, fencedtype.Invalid("unique args keys", "need args that are a JSON object")
		}
		keys := slices.Clone(u.ArgsKeys)
		sort.Strings(keys)
		part([]byte("keys"))
		for _, k := range keys {
			part([]byte(k))
			v, ok := obj[k]
			if !ok {
				part([]byte{0})
				continue
			}
			c, err := canonicalJSON(v)
			if err != nil {
				return nil, err
			}
			part(append([]byte{1}, c...))
		}
	case u.ByArgs:
		c, err := canonicalJSON(args)
		if err != nil {
			return nil, err
		}
		part([]byte("all"))
		part(c)
	default:
		part([]byte("none"))
	}
	sum := sha256.Sum256(b.Bytes())
	return sum[:], nil
}

// canonicalJSON re-encodes JSON text with the keys of every object sorted,
// no spaces, strings escaped as encoding/json escapes them, and numbers
// as written.
func canonicalJSON(b []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fencedtype.Invalid("args", "cannot be read for the unique key: %v", err)
	}
	var out bytes.Buffer
	if err := writeCanonical(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func writeCanonical(w *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			w.Write(kb)
			w.WriteByte(':')
			if err := writeCanonical(w, x[k]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeCanonical(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case json.Number:
		w.WriteString(x.String())
	default: // string, bool, nil
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("unique key: %w", err)
		}
		w.Write(b)
	}
	return nil
}
