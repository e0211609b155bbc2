package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/webhook"
)

var secret = []byte("test-secret")

// storeKind opens n Store handles sharing one database, as n server
// replicas would.
type storeKind = teststores.Kind

var storeKinds = teststores.Kinds("webhook")

func TestMain(m *testing.M) { teststores.Main(m) }

// delivery is one request the receiver got.
type delivery struct {
	ID, Kind  string
	Alert     webhook.Alert
	Body      []byte
	Signature string
	// Timed is the timestamped signature (HeaderSignatureV2).
	Timed    string
	Accepted bool
}

// receiver is a webhook endpoint that records every request. While down
// it answers 503; fail500 makes it answer 500 to that many requests, and
// to every alert of kind refuse.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	got     []delivery
	down    bool
	fail500 int
	refuse  string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := delivery{ID: req.Header.Get(webhook.HeaderEventID), Kind: req.Header.Get(webhook.HeaderEventKind),
			Body: body, Signature: req.Header.Get(webhook.HeaderSignature), Timed: req.Header.Get(webhook.HeaderSignatureV2)}
		if err := json.Unmarshal(body, &d.Alert); err != nil {
			t.Errorf("a body is not an alert: %v: %s", err, body)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case r.down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.fail500 > 0:
			r.fail500--
			w.WriteHeader(http.StatusInternalServerError)
		case r.refuse != "" && d.Kind == r.refuse:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			d.Accepted = true
		}
		r.got = append(r.got, d)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// all returns every request received; accepted only those answered 2xx.
func (r *receiver) all() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func (r *receiver) accepted() []delivery {
	var out []delivery
	for _, d := range r.all() {
		if d.Accepted {
			out = append(out, d)
		}
	}
	return out
}

// waitAccepted waits until the receiver accepted n requests, and returns
// them.
func (r *receiver) waitAccepted(t *testing.T, n int) []delivery {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.accepted()) >= n }, 60*time.Second, 5*time.Millisecond,
		"waiting for %d accepted deliveries", n)
	return r.accepted()
}

// fastConfig is a dispatcher configuration with short intervals.
func fastConfig(store backends.Store, clock backends.Clock, urls ...string) webhook.Config {
	return webhook.Config{
		Store: store, URLs: urls, Secret: secret, Clock: clock,
		Lease: 3 * time.Second, Timeout: time.Second, Poll: 5 * time.Millisecond, LateEvery: 5 * time.Millisecond,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 40 * time.Millisecond,
	}
}

// running is a dispatcher running until stop.
type running struct {
	d    *webhook.Dispatcher
	stop func()
}

func start(t *testing.T, cfg webhook.Config) *running {
	t.Helper()
	d, err := webhook.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	r := &running{d: d, stop: sync.OnceFunc(func() { cancel(); <-done })}
	t.Cleanup(r.stop)
	return r
}

// waitRecord waits until the webhook has a record in the store naming a
// replica that delivers it: from then on every alert reaches it.
func waitRecord(t *testing.T, store backends.Store, url string) {
	t.Helper()
	require.Eventually(t, func() bool {
		recs := recordsOf(t, store, url)
		return recs.Holder != ""
	}, 60*time.Second, 5*time.Millisecond, "waiting for the webhook's record")
}

type recordState struct {
	Seq    int64               `json:"seq"`
	Marks  map[string]lateMark `json:"marks"`
	Holder string              `json:"holder"`
	// Late is where versions before the deadlines stream kept the last
	// dataid checked of each dataset.
	Late map[string]string `json:"late"`
}

// lateMark is a dataset's watermark in the deadlines stream's record.
type lateMark struct {
	At   time.Time `json:"at"`
	Last string    `json:"last"`
}

// recordsOf reads the record of url's transitions (fail, lease_expired,
// hold alerts).
func recordsOf(t *testing.T, store backends.Store, url string) recordState {
	return recordAt(t, store, webhook.RecordKey(url))
}

// lateRecordOf reads the record of url's deadlines (late alerts).
func lateRecordOf(t *testing.T, store backends.Store, url string) recordState {
	return recordAt(t, store, webhook.LateRecordKey(url))
}

func recordAt(t *testing.T, store backends.Store, key string) recordState {
	r, err := store.Record(context.Background(), key)
	require.NoError(t, err)
	var st recordState
	if r.Version > 0 {
		require.NoError(t, json.Unmarshal(r.Value, &st))
	}
	return st
}

// pipeline defines a source src and a job j (src -> out) failing into
// HOLD at its second attempt.
func pipeline(t *testing.T, s backends.Store) {
	ctx := context.Background()
	for _, id := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id})
		require.NoError(t, err)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out", MaxAttempts: 2, LeaseSeconds: 60})
	require.NoError(t, err)
}

// holds makes n hold alerts: out/<from>..out/<from+n-1> put on HOLD.
func holds(t *testing.T, s backends.Store, from, n int) {
	for i := from; i < from+n; i++ {
		_, err := s.Hold(context.Background(), "out", fmt.Sprint(i), "operator")
		require.NoError(t, err)
	}
}
