package server

import (
	"context"
	"time"
)

// runReaper fails expired claims every ReaperInterval until ctx ends. Every
// replica of the server runs one; the store makes concurrent runs safe (a
// claim is expired once, by whichever run gets there first). Beside it,
// and without holding it up, the server resumes the backfills of jobs with
// mappings that a stopped server left unfinished (runResume), and sweeps
// the event log for events past their retention (runPruner).
func (s *Server) runReaper(ctx context.Context) {
	resumeDone := make(chan struct{})
	go func() {
		defer close(resumeDone)
		s.runResume(ctx)
	}()
	defer func() { <-resumeDone }()
	pruneDone := make(chan struct{})
	go func() {
		defer close(pruneDone)
		s.runPruner(ctx)
	}()
	defer func() { <-pruneDone }()
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

// runResume runs Store.ResumeBackfills at once and then every
// ReaperInterval until ctx ends: it finishes the backfills that a stopped
// server left owed, and in the background those whose apply failed here
// (a request timing out half way through a long history). A run costs
// nothing while none is owed; no run is cut short but by ctx.
func (s *Server) runResume(ctx context.Context) {
	for {
		n, err := s.cfg.Store.ResumeBackfills(ctx)
		if n > 0 {
			s.log.Info("finished the backfills of jobs with mappings left unfinished", "jobs", n)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("finishing backfills of jobs with mappings failed; retrying", "err", err, "in", s.cfg.ReaperInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.ReaperInterval):
		}
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
