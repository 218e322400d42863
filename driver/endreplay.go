package driver

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// DiagnoseEnd answers an end that wrote nothing, from what a read after it
// found: the job's row (nil when there is none) and the history entry of the
// attempt e ends, the one of e.Ref.Fence (nil when there is none). When
// the attempt had already ended the same way (SameEnd), the end is a
// replay, answered as the first one was: Replayed, at the first end's
// reading. Otherwise it is DiagnoseJob's refusal.
//
// Whatever the read is, it cannot mistake a live attempt for an ended one:
// an attempt ends once, by the one statement whose guard found it running
// under its fence and lease, and that end, once committed, stays as it was
// until the job is deleted (no write makes an ended attempt run again; a
// later attempt has another fence).
func DiagnoseEnd(e fencedtype.JobEnd, row *fencedtype.Job, ended *fencedtype.JobAttempt) (fencedtype.JobEnded, error) {
	if row != nil {
		if at, ok := SameEnd(e, row, ended); ok {
			return fencedtype.JobEnded{At: at, Replayed: true}, nil
		}
	}
	return fencedtype.JobEnded{}, DiagnoseJob(e.Ref, row)
}

// endOutcomes are the history outcomes an end of each kind other than a
// completion leaves: a job asked to cancel ends cancelled however its
// attempt ends, except by a completion.
var endOutcomes = map[fencedtype.EndKind][]string{
	fencedtype.EndFail:   {fencedtype.OutcomeRetry, fencedtype.OutcomeFailed, fencedtype.OutcomeCancelled},
	fencedtype.EndSnooze: {fencedtype.OutcomeSnoozed, fencedtype.OutcomeCancelled},
	fencedtype.EndCancel: {fencedtype.OutcomeCancelled},
}

// SameEnd says whether the attempt e ends had already ended the way e
// would end it, and when: the same kind with the same content. A
// completion: the job succeeded under e's fence (a completed attempt stays
// on its job's row) with the same output, compared as JSON values (the
// order of an object's keys and the spelling of a number do not matter:
// a backend may store either its own way). A fail, snooze or cancel: the
// attempt's history entry is one that kind leaves (a fail's is retry,
// failed, or cancelled when the job was asked to cancel) with the same
// error message. A repeat's delay, backoff and discard are not compared:
// the first end decided how its attempt was applied, and the repeat changes
// nothing. A lost attempt (taken back by recovery) never ended this way.
func SameEnd(e fencedtype.JobEnd, row *fencedtype.Job, ended *fencedtype.JobAttempt) (at time.Time, ok bool) {
	if e.Kind == fencedtype.EndComplete {
		if row.Fence == e.Ref.Fence && row.State == fencedtype.JobSucceeded && row.FinishedAt != nil &&
			sameJSON(row.Output, e.Output) {
			return *row.FinishedAt, true
		}
		return time.Time{}, false
	}
	if ended == nil || ended.Fence != e.Ref.Fence || ended.EndedAt == nil ||
		!slices.Contains(endOutcomes[e.Kind], ended.Outcome) || ended.Error != e.Error {
		return time.Time{}, false
	}
	return *ended.EndedAt, true
}

// sameJSON says whether a and b hold the same JSON value (both empty: no
// value, the same). Objects compare by key, whatever their order; numbers
// by their float64 values, which every backend's JSON keeps (MySQL stores
// a fraction as a double).
func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	va, oka := decodeJSON(a)
	vb, okb := decodeJSON(b)
	return oka && okb && jsonEqual(va, vb)
}

func decodeJSON(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !jsonEqual(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, jsonEqual)
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		fa, erra := strconv.ParseFloat(string(a), 64)
		fb, errb := strconv.ParseFloat(string(b), 64)
		return erra == nil && errb == nil && fa == fb
	default: // string, bool, nil
		return a == b
	}
}
