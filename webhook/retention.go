package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chunklock/chunklock/backends"
)

// Delivered tells how far every webhook of the dispatcher has looked at
// the event log: the smallest cursor (state.Seq) of their transitions
// records, and whether any record holds one. Event retention keeps every
// event after it (backends.PrunePolicy.KeepAfter), so that a webhook whose
// endpoint is down, or whose server is stopped, still gets every alert
// when it comes back. A webhook never delivered yet has no record and
// holds nothing: it starts at the newest event when it first runs.
func (d *Dispatcher) Delivered(ctx context.Context) (seq int64, hold bool, err error) {
	return Delivered(ctx, d.cfg.Store, d.cfg.URLs)
}

// Delivered is Dispatcher.Delivered for the webhooks urls on store.
func Delivered(ctx context.Context, store backends.Store, urls []string) (seq int64, hold bool, err error) {
	for _, u := range urls {
		rec, err := store.Record(ctx, recordKey(u))
		if err != nil {
			return 0, false, err
		}
		if rec.Version == 0 {
			continue
		}
		var st state
		if err := json.Unmarshal(rec.Value, &st); err != nil {
			return 0, false, fmt.Errorf("the record %s of webhook %s is corrupt: %w", recordKey(u), Redact(u), err)
		}
		if !hold || st.Seq < seq {
			seq, hold = st.Seq, true
		}
	}
	return seq, hold, nil
}
