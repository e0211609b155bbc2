package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/resolvers"
)

// metrics are the server's Prometheus metrics, served at /metrics. Job
// labels are recorded only after an operation succeeded, so they name jobs
// that exist and cannot be inflated by requests naming made-up jobs.
type metrics struct {
	claims      *prometheus.CounterVec
	completions *prometheus.CounterVec
	failures    *prometheus.CounterVec
	expiries    prometheus.Counter
	pruned      prometheus.Counter
	findNext    *prometheus.HistogramVec
	errors      *prometheus.CounterVec
}

var _ resolvers.Metrics = (*metrics)(nil)

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chunklock_claims_total",
			Help: "Claims made, by job and by operation (findNext, claim, force).",
		}, []string{"job", "via"}),
		completions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chunklock_completions_total",
			Help: "Claims completed, by job.",
		}, []string{"job"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chunklock_failures_total",
			Help: "Claims failed by their runner, by job (lease expiries are counted apart).",
		}, []string{"job"}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chunklock_lease_expiries_total",
			Help: "Claims failed by this server's lease reaper because their lease passed.",
		}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chunklock_events_pruned_total",
			Help: "Events this server's sweep removed because they were past their retention (--retain-events, or a dataset's own).",
		}),
		findNext: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chunklock_findnext_duration_seconds",
			Help:    "Time findNext took, by outcome (claimed, empty, error).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chunklock_errors_total",
			Help: "Errors answered to clients, by extensions.code.",
		}, []string{"code"}),
	}
	reg.MustRegister(
		m.claims, m.completions, m.failures, m.expiries, m.pruned, m.findNext, m.errors,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) Claimed(job, via string) { m.claims.WithLabelValues(job, via).Inc() }
func (m *metrics) Completed(job string)    { m.completions.WithLabelValues(job).Inc() }
func (m *metrics) Failed(job string)       { m.failures.WithLabelValues(job).Inc() }
func (m *metrics) FindNext(d time.Duration, outcome string) {
	m.findNext.WithLabelValues(outcome).Observe(d.Seconds())
}

func (m *metrics) errorAnswered(code backends.Code) { m.errors.WithLabelValues(string(code)).Inc() }
