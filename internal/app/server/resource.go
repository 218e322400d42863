package server

import (
	"encoding/base64"
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

type putResourceRequest struct {
	// Value is UTF-8 text (the body is refused if it is not UTF-8); "" is
	// a value.
	Value       *string `json:"value"`
	Fence       *int64  `json:"fence"`
	OperationID string  `json:"operation_id"`
}

// resourceWriteReply is an accepted write.
type resourceWriteReply struct {
	fenced.ResourceWrite
	DBTime wire.Time `json:"db_time,omitzero"`
}

// putResource: PUT /v1/resources/{key} {value, fence, operation_id?} →
// the fence stored and the version created; 409 stale_fence (with the
// stored fence) when fence is below it, and nothing changes.
func (s *Server) putResource(r *http.Request) (*reply, error) {
	var req putResourceRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	value, err := required("value", req.Value)
	if err != nil {
		return nil, err
	}
	fence, err := required("fence", req.Fence)
	if err != nil {
		return nil, err
	}
	w, err := s.c.WriteResource(r.Context(), r.PathValue("key"), []byte(value), fence,
		fenced.WriteOptions{OperationID: req.OperationID})
	if err != nil {
		return nil, err
	}
	t := s.dbNow(r.Context())
	return ok(resourceWriteReply{*w, wire.Time(t)}, t), nil
}

// resourceReply is a stored resource.
type resourceReply struct {
	wire.Resource
	DBTime wire.Time `json:"db_time,omitzero"`
}

// getResource: GET /v1/resources/{key} → {key, value, fence, version,
// updated_at}. A value that is not UTF-8 (stored through the library) is
// sent as value_base64 with value "".
func (s *Server) getResource(r *http.Request) (*reply, error) {
	res, err := s.c.ReadResource(r.Context(), r.PathValue("key"))
	if errors.Is(err, fenced.ErrNotFound) {
		return nil, notFound("resource", r.PathValue("key"))
	}
	if err != nil {
		return nil, err
	}
	out := wire.ResourceFrom(res)
	if !utf8.Valid(res.Value) {
		out.Value, out.ValueBase64 = "", base64.StdEncoding.EncodeToString(res.Value)
	}
	t := s.dbNow(r.Context())
	return ok(resourceReply{out, wire.Time(t)}, t), nil
}
