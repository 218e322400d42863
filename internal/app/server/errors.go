package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/fenced/fenced/internal/lib/wire"
)

// The error codes of the "error" field. Stable: clients switch on them.
const (
	codeInvalid          = "invalid"            // 400: input refused; field names it
	codeUnauthorized     = "unauthorized"       // 401: no or unknown bearer token
	codeForbidden        = "forbidden"          // 403: cross-origin, or not loopback without tokens
	codeNotFound         = "not_found"          // 404: no such lease, resource, job or route
	codeMethodNotAllowed = "method_not_allowed" // 405
	codeLeaseHeld        = "lease_held"         // 409: acquire refused, another owner holds it
	codeStaleFence       = "stale_fence"        // 409: the fence is no longer current
	codeConflict         = "conflict"           // 409: the job's state forbids the operation
	codeUniqueConflict   = "unique_conflict"    // 409: another job holds the job's unique slot
	codeTooLarge         = "too_large"          // 413: body over the limit
	codeTooManyRequests  = "too_many_requests"  // 429: too many wrong tokens; Retry-After says when to try again
	codeUnsupportedType  = "unsupported_media_type"
	codeNotSupported     = "not_supported"   // 501: the backend lacks the capability (jobs on etcd)
	codeUnavailable      = "unavailable"     // 503: the database does not answer (/healthz)
	codeUnknownOutcome   = "unknown_outcome" // 503: the database connection failed after the write was sent
	codeInternal         = "internal"        // 500: a failure that is not the request's fault
	codeCancelled        = "cancelled"       // 499: the client went away; logged, never read

	// 503: a claim would wait while Config.MaxWaiters do; with Retry-After.
	codeTooManyWaiters = "too_many_waiters"
)

// statusClientClosed is the status logged and counted for a request whose
// client went away before the answer (nginx's 499); nobody receives it.
const statusClientClosed = 499

// errorBody is what every error answer holds; detail types embed it.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	// DBTime is set when the database decided the error (held, stale,
	// conflict, not found): the reading the decision was made at when the
	// library returns one (a job's stale write), else the clock reading
	// taken right after it.
	DBTime *wire.Time `json:"db_time,omitempty"`
}

func (b *errorBody) base() *errorBody { return b }

type invalidBody struct {
	errorBody
	Field string `json:"field"`
}

type heldBody struct {
	errorBody
	Name      string    `json:"name"`
	Owner     string    `json:"owner"`
	Fence     int64     `json:"fence"`
	ExpiresAt wire.Time `json:"expires_at"`
	Slots     int       `json:"slots,omitempty"` // a semaphore's, all held
}

type staleBody struct {
	errorBody
	Kind         fenced.StaleKind   `json:"kind"` // lease, semaphore, job or resource
	Name         string             `json:"name"` // lease or semaphore name, job id or resource key
	YourFence    int64              `json:"your_fence"`
	CurrentFence int64              `json:"current_fence"`
	CurrentOwner string             `json:"current_owner"` // "" when nobody holds it now
	Reason       fenced.StaleReason `json:"reason"`
}

// uniqueConflictBody is a retry refused because another job holds the
// job's unique slot; existing_id is that job (0: it left the slot since).
type uniqueConflictBody struct {
	errorBody
	Op         string `json:"op"`
	ID         int64  `json:"id"`
	ExistingID int64  `json:"existing_id"`
}

type conflictBody struct {
	errorBody
	Op    string          `json:"op"`
	ID    int64           `json:"id"`
	State fenced.JobState `json:"state"`
}

// apiError is an error answer.
type apiError struct {
	status int
	body   interface{ base() *errorBody }
	fromDB bool      // decided by the database: stamped with its time
	at     time.Time // that time, when the library returned it (a job's stale error)
	// retryAfter, when positive, is sent as Retry-After (a 429 or a 503).
	retryAfter time.Duration
}

func newError(status int, code, message string) *apiError {
	return &apiError{status: status, body: &errorBody{Error: code, Message: message}}
}

func invalid(field, message string) *apiError {
	return &apiError{status: http.StatusBadRequest,
		body: &invalidBody{errorBody{Error: codeInvalid, Message: message}, field}}
}

func forbidden(message string) *apiError {
	return newError(http.StatusForbidden, codeForbidden, message)
}

func notFoundRoute(r *http.Request) *apiError {
	return newError(http.StatusNotFound, codeNotFound, "no route "+r.Method+" "+r.URL.Path)
}

// notFound is a 404 the database decided: kind name does not exist.
func notFound(kind, name string) *apiError {
	e := newError(http.StatusNotFound, codeNotFound, kind+" "+display.Quote(name)+" not found")
	e.fromDB = true
	return e
}

// errorFor maps an error from the library (or from decoding) to its
// answer. Input errors are never 500s.
func (s *Server) errorFor(r *http.Request, err error) *apiError {
	var (
		ae    *apiError
		inv   *fenced.InvalidError
		held  *fenced.HeldError
		stale *fenced.StaleError
		state *fenced.JobStateError
		uniq  *fenced.UniqueConflictError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &inv):
		return invalid(wireField(inv.Field), err.Error())
	case errors.As(err, &held):
		return &apiError{status: http.StatusConflict, fromDB: true, body: &heldBody{
			errorBody{Error: codeLeaseHeld, Message: err.Error()},
			held.Name, held.Owner, held.Fence, wire.Time(held.ExpiresAt), held.Slots}}
	case errors.As(err, &stale):
		s.metrics.stale.WithLabelValues(string(stale.Kind), string(stale.Reason)).Inc()
		at := stale.DecidedAt
		if at.IsZero() {
			at = time.Now()
		}
		s.staleMinutes.add(at)
		return &apiError{status: http.StatusConflict, fromDB: true, at: stale.DecidedAt, body: &staleBody{
			errorBody{Error: codeStaleFence, Message: err.Error()},
			stale.Kind, stale.Name, stale.Fence, stale.CurrentFence, stale.CurrentOwner, stale.Reason}}
	case errors.As(err, &state):
		return &apiError{status: http.StatusConflict, fromDB: true, body: &conflictBody{
			errorBody{Error: codeConflict, Message: err.Error()}, state.Op, state.ID, state.State}}
	case errors.As(err, &uniq):
		return &apiError{status: http.StatusConflict, fromDB: true, body: &uniqueConflictBody{
			errorBody{Error: codeUniqueConflict, Message: err.Error()}, uniq.Op, uniq.ID, uniq.ExistingID}}
	case errors.Is(err, fenced.ErrNotFound):
		e := newError(http.StatusNotFound, codeNotFound, err.Error())
		e.fromDB = true
		return e
	case errors.Is(err, errors.ErrUnsupported):
		return newError(http.StatusNotImplemented, codeNotSupported, err.Error())
	case errors.Is(err, fenced.ErrUnknownOutcome):
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "outcome unknown", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("err", s.cfg.Redact(err.Error())))
		return newError(http.StatusServiceUnavailable, codeUnknownOutcome,
			"the database connection failed after the request was sent: it may or may not have been applied; read the state, or repeat it where a repeat is safe")
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		return newError(statusClientClosed, codeCancelled, "the client went away")
	default:
		s.log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("err", s.cfg.Redact(err.Error())))
		return newError(http.StatusInternalServerError, codeInternal, "internal error; the server log has the cause")
	}
}

// wireField names a library field as the JSON request names it.
func wireField(field string) string {
	switch field {
	case "lease name", "semaphore name":
		return "name"
	case "resource key":
		return "key"
	case "job id":
		return "id"
	case "delay":
		return "delay_ms"
	case "unique by period":
		return "unique.by_period_ms"
	case "unique states":
		return "unique.by_state"
	case "unique args key", "unique args keys":
		return "unique.args_keys"
	}
	return strings.ReplaceAll(field, " ", "_") // operation id, idempotency key
}

// writeError writes e; an error the database decided is stamped with the
// database time it was decided at when the library returned it, else with
// one read now (right after the decision).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	var t time.Time
	if e.fromDB {
		if t = e.at; t.IsZero() {
			t = s.dbNow(r.Context())
		}
		if !t.IsZero() {
			u := wire.Time(t)
			e.body.base().DBTime = &u
		}
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fenced"`)
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", retryAfter(e.retryAfter))
	}
	writeJSON(w, e.status, e.body, t)
}

// Error makes *apiError an error, so route functions can return one.
func (e *apiError) Error() string { return e.body.base().Message }
