package server

import (
	"context"
	"net/http"
	"time"
)

// healthz answers 200 while the process serves requests.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 when the store answers a ping within two seconds, and
// 503 otherwise (the cause goes to the log, not to the prober). A store
// near its quota, or past it, adds a warning line saying what to do; it
// stays ready even at its quota, where reads still answer and writes are
// refused with the same advice: taking the only server out of a load
// balancer would hide the dashboard and every read from the operator.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.cfg.Store.Ping(ctx); err != nil {
		s.log.Warn("readiness: the store does not answer", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("store unavailable\n"))
		return
	}
	_, _ = w.Write([]byte("ready\n"))
	if s.cfg.Space != nil {
		if warn := s.cfg.SpaceWarning(s.cfg.Space()); warn != "" {
			_, _ = w.Write([]byte("warning: " + warn + "\n"))
		}
	}
}
