package server

import (
	"net/http"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

// slotsReply is the load of the concurrency keys in use.
type slotsReply struct {
	Slots  []keySlotReply `json:"slots"`
	DBTime wire.Time      `json:"db_time,omitzero"`
}

// keySlotReply is one key's load and the due jobs its limit holds back.
type keySlotReply struct {
	fenced.KeySlots
	HeldBack int64 `json:"held_back"`
}

// listKeySlots: GET /v1/slots (every queue) or GET
// /v1/queues/{queue}/slots → {"slots": [{queue, concurrency_key, limit,
// running, waiting, held_back}, …]} by queue and key: the keys with
// running or due queued jobs (see fenced.Client.ListKeySlots).
func (s *Server) listKeySlots(r *http.Request) (*reply, error) {
	ks, err := s.c.ListKeySlots(r.Context(), r.PathValue("queue"))
	if err != nil {
		return nil, err
	}
	out := make([]keySlotReply, len(ks))
	for i, k := range ks {
		out[i] = keySlotReply{k, k.HeldBack()}
	}
	at := s.dbNow(r.Context())
	return ok(slotsReply{out, wire.Time(at)}, at), nil
}
