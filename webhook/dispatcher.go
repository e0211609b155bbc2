package webhook

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chunklock/chunklock/backends"
)

// Config configures a Dispatcher.
type Config struct {
	Store backends.Store
	// URLs are the webhook endpoints (http or https), each delivered on
	// its own, with its own cursor.
	URLs []string
	// Secret keys the HMAC-SHA256 signature of every body. Never logged.
	Secret []byte
	// Clock tells the time for late chunks; it should be the store's
	// (nil: the system clock).
	Clock  backends.Clock
	Logger *slog.Logger
	// Replica names this process in the store's records (default: host
	// name, process id and a random suffix).
	Replica string

	// Lease is how long a replica that stopped writing a webhook's record
	// keeps it before another replica takes over delivery.
	Lease time.Duration
	// Timeout bounds one HTTP request; at most a third of Lease.
	Timeout time.Duration
	// Poll is how often the event log is read for new alerts.
	Poll time.Duration
	// LateEvery is how often datasets are checked for late chunks.
	LateEvery time.Duration
	// LateCap bounds the late alerts of one dataset a check sends: when
	// more of its chunks became late since the last check (deadlines
	// passed while no server watched), one late_summary alert counts them
	// instead (default 100).
	LateCap int
	// MinBackoff and MaxBackoff bound the wait between attempts of one
	// delivery: MinBackoff, doubling, at most MaxBackoff.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// Client sends the requests (default: one with Timeout that does not
	// follow redirects).
	Client *http.Client
}

// DefaultConfig returns the default timings; Store, URLs and Secret still
// need to be set.
func DefaultConfig() Config {
	return Config{
		Lease: 30 * time.Second, Timeout: 10 * time.Second, Poll: time.Second, LateEvery: 30 * time.Second,
		LateCap: 100, MinBackoff: time.Second, MaxBackoff: 5 * time.Minute,
	}
}

// CheckURL reports whether u is usable as a webhook URL.
func CheckURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("webhook %q: want an absolute http:// or https:// URL", Redact(u))
	}
	return nil
}

// Redact returns u without its user information and query: what logs and
// metrics show of a webhook URL, which may carry credentials.
func Redact(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "(unparsable URL)"
	}
	return p.Scheme + "://" + p.Host + p.EscapedPath()
}

// recordKey is the key of a webhook's record: a hash of its URL, which
// may carry credentials.
func recordKey(u string) string {
	h := sha256.Sum256([]byte(u))
	return "webhook/" + hex.EncodeToString(h[:16])
}

// Dispatcher delivers alerts to every configured webhook. It is a
// prometheus.Collector of its delivery metrics.
type Dispatcher struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
}

// New checks cfg and builds a Dispatcher.
func New(cfg Config) (*Dispatcher, error) {
	d := DefaultConfig()
	if cfg.Lease == 0 {
		cfg.Lease = d.Lease
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.Poll == 0 {
		cfg.Poll = d.Poll
	}
	if cfg.LateEvery == 0 {
		cfg.LateEvery = d.LateEvery
	}
	if cfg.LateCap == 0 {
		cfg.LateCap = d.LateCap
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = d.MinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = d.MaxBackoff
	}
	switch {
	case cfg.Store == nil:
		return nil, errors.New("webhook: no store")
	case len(cfg.URLs) == 0:
		return nil, errors.New("webhook: no URL")
	case len(cfg.Secret) == 0:
		return nil, errors.New("webhook: no secret; every delivery is signed with one (--webhook-secret or --webhook-secret-file)")
	case cfg.Timeout*3 > cfg.Lease:
		return nil, fmt.Errorf("webhook: the request timeout %s is more than a third of the lease %s", cfg.Timeout, cfg.Lease)
	case cfg.Poll <= 0 || cfg.LateEvery <= 0 || cfg.MinBackoff <= 0 || cfg.MaxBackoff < cfg.MinBackoff:
		return nil, errors.New("webhook: poll, late check and backoff intervals must be positive, the maximum backoff at least the minimum")
	case cfg.LateCap < 0:
		return nil, fmt.Errorf("webhook: the cap on late alerts a check must be positive, got %d", cfg.LateCap)
	}
	seen := map[string]bool{}
	for _, u := range cfg.URLs {
		if err := CheckURL(u); err != nil {
			return nil, err
		}
		if seen[u] {
			return nil, fmt.Errorf("webhook %s is given twice", Redact(u))
		}
		seen[u] = true
	}
	cfg.URLs = slices.Clone(cfg.URLs)
	if cfg.Clock == nil {
		cfg.Clock = backends.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Replica == "" {
		cfg.Replica = replicaName()
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{
			Timeout:       cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Dispatcher{cfg: cfg, log: cfg.Logger, metrics: newMetrics()}, nil
}

func replicaName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Run delivers until ctx ends: each stream of each webhook (transitions,
// deadlines) on its own. On the way out each stream this replica delivers
// is handed back (its record names no replica), so that another replica,
// or this server restarted, resumes at once.
func (d *Dispatcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, u := range d.cfg.URLs {
		for _, stream := range []string{streamTransitions, streamDeadlines} {
			w := newWorker(d, u, stream)
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(ctx)
			}()
		}
	}
	wg.Wait()
}

// Describe and Collect make the Dispatcher a prometheus.Collector.
func (d *Dispatcher) Describe(ch chan<- *prometheus.Desc) { d.metrics.describe(ch) }

// Collect collects the delivery metrics.
func (d *Dispatcher) Collect(ch chan<- prometheus.Metric) { d.metrics.collect(ch) }

type metrics struct {
	attempts   *prometheus.CounterVec
	delivered  *prometheus.CounterVec
	lag        *streamGauge
	delivering *streamGauge
}

func newMetrics() *metrics {
	return &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chunklock_webhook_attempts_total",
			Help: "HTTP deliveries attempted by this replica, by webhook (URL without credentials or query) and result: ok (2xx) or error (another status, or no answer).",
		}, []string{"webhook", "result"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chunklock_webhook_alerts_delivered_total",
			Help: "Alerts delivered (answered 2xx) by this replica, by webhook and kind.",
		}, []string{"webhook", "kind"}),
		lag: newStreamGauge("chunklock_webhook_lag_seconds",
			"Age of the oldest alert not yet delivered to the webhook (0 when none waits), over its streams this replica delivers."),
		delivering: newStreamGauge("chunklock_webhook_delivering",
			"1 when this replica delivers the webhook's alerts (holds the lease of a stream of them), else 0."),
	}
}

// streamGauge is a gauge by webhook whose value is the largest that the
// webhook's streams set on this replica.
type streamGauge struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	v    map[string]map[string]float64 // webhook -> stream -> value
}

func newStreamGauge(name, help string) *streamGauge {
	return &streamGauge{desc: prometheus.NewDesc(name, help, []string{"webhook"}, nil), v: map[string]map[string]float64{}}
}

func (g *streamGauge) set(webhook, stream string, v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.v[webhook] == nil {
		g.v[webhook] = map[string]float64{}
	}
	g.v[webhook][stream] = v
}

// drop removes a stream's value; the webhook's series goes when none is left.
func (g *streamGauge) drop(webhook, stream string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.v[webhook], stream)
	if len(g.v[webhook]) == 0 {
		delete(g.v, webhook)
	}
}

func (g *streamGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *streamGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for webhook, streams := range g.v {
		top := 0.0
		for _, v := range streams {
			top = max(top, v)
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, top, webhook)
	}
}

func (m *metrics) describe(ch chan<- *prometheus.Desc) {
	m.attempts.Describe(ch)
	m.delivered.Describe(ch)
	m.lag.Describe(ch)
	m.delivering.Describe(ch)
}

func (m *metrics) collect(ch chan<- prometheus.Metric) {
	m.attempts.Collect(ch)
	m.delivered.Collect(ch)
	m.lag.Collect(ch)
	m.delivering.Collect(ch)
}
