package server

import (
	"context"
	"time"
)

// runReaper fails expired claims every ReaperInterval until ctx ends. Every
// replica of the server runs one; the store makes concurrent runs safe (a
// claim is expired once, by whichever run gets there first).
// Its first pass, at once, and every pass until one succeeds, also resumes
// the backfills of jobs with mappings that a server stopped half way.
func (s *Server) runReaper(ctx context.Context) {
	resumed := s.resumeBackfills(ctx)
	t := time.NewTicker(s.cfg.ReaperInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !resumed {
			resumed = s.resumeBackfills(ctx)
		}
		s.reap(ctx)
	}
}

// resumeBackfills runs the backfills left pending (Store.ResumeBackfills)
// and tells whether that worked.
func (s *Server) resumeBackfills(ctx context.Context) bool {
	n, err := s.cfg.Store.ResumeBackfills(ctx)
	if n > 0 {
		s.log.Info("resumed backfills of jobs with mappings that a server left unfinished", "jobs", n)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("resuming unfinished backfills failed; retrying next reaper interval", "err", err)
		}
		return false
	}
	return true
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
