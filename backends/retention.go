package backends

import (
	"context"
	"time"
)

// Event retention (issue 28, SPEC §11): the event log gets one event per
// transition of a row, so without retention the store grows with
// transitions. Pruning removes events older than their retention, a batch
// at a time, and nothing else:
//
//   - catalog changes (CatalogChanges) are a log of their own and are never
//     pruned;
//   - nothing decides a claim or a cascade from events: claims read status
//     rows and candidates, cascades follow DONE INPUT rows (one per chunk
//     and consumer, replaced in place: they grow with chunks, not with
//     transitions), and pruning touches neither;
//   - events a consumer of the log has not looked at yet (a webhook's
//     cursor, PrunePolicy.KeepAfter) stay.

// Retention is a dataset's own retention, in place of the server's.
type Retention struct {
	// EventsSeconds is how long the dataset's events are kept, in
	// seconds; 0 keeps them for ever.
	EventsSeconds int
}

// MaxRetentionSeconds bounds Retention.EventsSeconds: fifty years.
const MaxRetentionSeconds = 50 * 366 * 24 * 3600

// PrunePolicy is what one Store.PruneEvents call prunes.
type PrunePolicy struct {
	// Events is the server-wide retention of events: an event older is
	// pruned unless its dataset has its own Retention. 0 keeps them (only
	// datasets with their own retention are pruned then).
	Events time.Duration
	// Hold, when true, keeps every event with a Seq above KeepAfter: the
	// events a consumer of the log (a webhook) has not looked at yet.
	Hold      bool
	KeepAfter int64
	// After is where the sweep goes on from: 0 to start at the oldest
	// event, else the Next of the call before.
	After int64
}

// PruneResult is what one Store.PruneEvents call did.
type PruneResult struct {
	// Pruned is how many events it removed (an event removed by another
	// server at the same time may be counted by both).
	Pruned int
	// Scanned is how many events it looked at.
	Scanned int
	// Next is where the next call goes on (PrunePolicy.After): 0 when
	// the sweep reached events too new to prune, or the end of the log.
	Next int64
}

// PruneBatch is how many events one read and one delete of
// Store.PruneEvents handle; PrunePages, how many reads one call makes at
// most.
const (
	PruneBatch = 256
	PrunePages = 8
)

// EventPruner is the part of Store that prunes the event log.
type EventPruner interface {
	// PruneEvents removes events older than their retention (their
	// dataset's Retention, else p.Events), oldest first, in transactions
	// of at most PruneBatch events that lock no status row, and returns
	// where to go on. An event with a Seq above p.KeepAfter (p.Hold)
	// stays, and so does every event after it. Safe to run from any
	// number of servers at once: removing an event twice removes it once.
	PruneEvents(ctx context.Context, p PrunePolicy) (PruneResult, error)
}

// RetentionOf returns how long an event of dataset d is kept under the
// server-wide retention def: d's own retention if it has one (known
// tells whether the dataset is in the catalog); 0: for ever.
func RetentionOf(d Dataset, known bool, def time.Duration) time.Duration {
	if known && d.Retention != nil {
		return time.Duration(d.Retention.EventsSeconds) * time.Second
	}
	return def
}
