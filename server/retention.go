package server

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Event retention (issue 28): every replica sweeps the event log every
// PruneInterval and removes events past their retention (RetainEvents,
// or a dataset's own), a page at a time (Store.PruneEvents), never one a
// webhook of this server has not delivered. Replicas sharing a store may
// sweep at once: an event removed twice is removed once.

// pruneCalls bounds the PruneEvents calls of one round: a long backlog (a
// retention just set on years of history) is worked off over several
// rounds, each a few seconds at most.
const pruneCalls = 32

// runPruner sweeps every PruneInterval until ctx ends.
func (s *Server) runPruner(ctx context.Context) {
	t := time.NewTicker(s.cfg.PruneInterval)
	defer t.Stop()
	var after int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		after = s.pruneRound(ctx, after)
	}
}

// pruneRound runs one round of the sweep from after and returns where the
// next one goes on.
func (s *Server) pruneRound(ctx context.Context, after int64) int64 {
	ctx, cancel := context.WithTimeout(ctx, max(s.cfg.PruneInterval, s.cfg.RequestTimeout))
	defer cancel()
	start := time.Now()
	p := backends.PrunePolicy{Events: s.cfg.RetainEvents, After: after}
	if s.cfg.Alerts != nil {
		var err error
		if p.KeepAfter, p.Hold, err = s.cfg.Alerts.Delivered(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("event retention: reading the webhooks' cursors failed; pruning nothing this round", "err", err)
			}
			return after
		}
	}
	pruned, scanned := 0, 0
	for range pruneCalls {
		res, err := s.cfg.Store.PruneEvents(ctx, p)
		pruned += res.Pruned
		scanned += res.Scanned
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("event retention: pruning failed; going on next round", "err", err)
			}
			break
		}
		if p.After = res.Next; p.After == 0 {
			break
		}
	}
	s.metrics.pruned.Add(float64(pruned))
	if pruned > 0 {
		attrs := []any{"events", pruned, "scanned", scanned, "took", time.Since(start).Round(time.Millisecond),
			"retain_events", s.cfg.RetainEvents.String()}
		if p.Hold {
			attrs = append(attrs, "webhooks_delivered_through_seq", p.KeepAfter)
		}
		s.log.Info("event retention: pruned events past their retention", attrs...)
	}
	return p.After
}
