package server

import (
	"context"
	"time"
)

// runReaper fails expired claims every ReaperInterval until ctx ends. Every
// replica of the server runs one; the store makes concurrent runs safe (a
// claim is expired once, by whichever run gets there first).
func (s *Server) runReaper(ctx context.Context) {
	t := time.NewTicker(s.cfg.ReaperInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.reap(ctx)
	}
}

// reap runs one pass of the reaper, bounded by the reaper interval or the
// request timeout, whichever is longer.
func (s *Server) reap(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(s.cfg.ReaperInterval, s.cfg.RequestTimeout))
	defer cancel()
	n, err := s.cfg.Store.ExpireLeases(ctx)
	if n > 0 {
		s.metrics.expiries.Add(float64(n))
		s.log.Info("failed claims whose lease expired", "count", n)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("lease reaper: expiring leases failed; retrying next interval", "err", err)
	}
}
