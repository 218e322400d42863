package driver

import (
	"fmt"

	"github.com/fenced/fenced/fencedtype"
)

// KeySlotLimitSQL is the limit column of a ListKeySlots read: the per-key
// limit (0 none) that applies to the concurrency key of the grouped row
// aliased j, which has the columns queue, concurrency_key and kind, kind
// being the kind of all the key's counted jobs or the empty string when
// they are of several. It is the claim's jobKeyLimitSQL: with an empty kind
// the kind step reads the queue's own row, so a key of mixed kinds reports
// its own limit, else the queue's default (see fencedtype.KeySlots). Valid
// on every backend.
var KeySlotLimitSQL = fmt.Sprintf(jobKeyLimitSQL, "0")

// ScanKeySlots scans a row of a ListKeySlots read: queue, concurrency key,
// limit, running, waiting.
func ScanKeySlots(r Row) (fencedtype.KeySlots, error) {
	var k fencedtype.KeySlots
	err := r.Scan(&k.Queue, &k.ConcurrencyKey, &k.Limit, &k.Running, &k.Waiting)
	return k, err
}
