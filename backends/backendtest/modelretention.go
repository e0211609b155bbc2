package backendtest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Pruning as an operation of the model test (issue 28, backends/retention.go).
// The model's rule, read from the specification and not from the engine's
// sweep: an event goes when its dataset's retention (the dataset's own,
// else the server-wide one drawn for the call) is not zero, the event is
// older than that retention at the model's time, and, when a consumer
// holds the log, its Seq is not above the consumer's cursor. Every other
// event stays, and nothing else changes: rows, claims, locks and counts are
// compared with the model after the step as after any other, so later
// claims and cascades still follow the model that never pruned anything.

// modelRetention is the model datasets' own retention: a keeps its events
// a minute whatever the server says, b for ever.
var modelRetention = map[string]time.Duration{"a": time.Minute, "b": 0}

// setRetention gives the model datasets their own retention.
func (h *harness) setRetention() {
	h.t.Helper()
	for id, r := range modelRetention {
		d, err := h.b.s.Dataset(h.b.ctx, id)
		if err != nil {
			h.t.Fatalf("dataset %s: %v", id, err)
		}
		d.Retention = &backends.Retention{EventsSeconds: int(r / time.Second)}
		if _, err := h.b.s.UpsertDataset(h.b.ctx, d); err != nil {
			h.t.Fatalf("upsert dataset %s with its retention: %v", id, err)
		}
	}
}

// drawPrune draws a server-wide retention and, half the time, a consumer's
// cursor among the log's events.
func (h *harness) drawPrune(r *rand.Rand, o *op) {
	o.advance = pick(r, []time.Duration{0, 30 * time.Second, 2 * time.Minute, 20 * time.Minute})
	o.tok = -1
	if r.IntN(2) == 0 {
		evs := h.b.events(backends.EventFilter{})
		o.tok = 0
		if len(evs) > 0 {
			o.tok = int(evs[r.IntN(len(evs))].Seq)
		}
	}
}

func pruneString(o op) string {
	if o.tok < 0 {
		return fmt.Sprintf("pruneEvents(retain=%s)", o.advance)
	}
	return fmt.Sprintf("pruneEvents(retain=%s, keepAfter=%d)", o.advance, o.tok)
}

// retentionOf is how long the model keeps an event of dataset under the
// server-wide retention def (0: for ever).
func retentionOf(dataset string, def time.Duration) time.Duration {
	if r, ok := modelRetention[dataset]; ok {
		return r
	}
	return def
}

// keptEvents is what the model says pruning leaves of log.
func (m *model) keptEvents(log []backends.Event, def time.Duration, hold bool, keepAfter int64) []int64 {
	var out []int64
	for _, e := range log {
		r := retentionOf(e.Dataset, def)
		if r == 0 || !e.Time.Before(m.now.Add(-r)) || (hold && e.Seq > keepAfter) {
			out = append(out, e.Seq)
		}
	}
	return out
}

func seqsOf(evs []backends.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

// applyPrune prunes the store's log until its sweep ends, and compares
// what stays with the model's rule; the catalog changes stay whole.
func (h *harness) applyPrune(o op) {
	h.t.Helper()
	before := h.b.events(backends.EventFilter{})
	changes := h.countChanges()
	p := backends.PrunePolicy{Events: o.advance, Hold: o.tok >= 0, KeepAfter: int64(o.tok)}
	want := h.m.keptEvents(before, p.Events, p.Hold, p.KeepAfter)
	pruned := 0
	for i := 0; ; i++ {
		if i == 1000 {
			h.fatalf("%s: the sweep does not end", pruneString(o))
		}
		res, err := h.b.s.PruneEvents(h.b.ctx, p)
		h.code(pruneString(o), "", err)
		pruned += res.Pruned
		if p.After = res.Next; p.After == 0 {
			break
		}
	}
	h.equal(pruneString(o)+": the events left", want, seqsOf(h.b.events(backends.EventFilter{})))
	h.equal(pruneString(o)+": events pruned", len(before)-len(want), pruned)
	h.equal(pruneString(o)+": catalog changes", changes, h.countChanges())
}
