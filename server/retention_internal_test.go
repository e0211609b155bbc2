package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/webhook"
)

// TestPruneRound: a round of the server's sweep prunes the events past
// --retain-events, counts them at /metrics and logs one line, keeps those
// a webhook has not delivered, and neither counts nor logs a round that
// pruned nothing.
func TestPruneRound(t *testing.T) {
	ctx := context.Background()
	clock := backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := memory.New()
	store := engine.New(b, engine.WithClock(clock))
	t.Cleanup(func() { _ = store.Close() })
	_, err := store.UpsertDataset(ctx, backends.Dataset{ID: "src"})
	require.NoError(t, err)
	for _, id := range []string{"1", "2", "3", "4"} {
		_, err := store.Publish(ctx, "src", id)
		require.NoError(t, err)
	}
	page, err := store.Events(ctx, backends.EventFilter{})
	require.NoError(t, err)
	require.Len(t, page.Events, 4)
	clock.Advance(48 * time.Hour)

	// A webhook that delivered through the second event (its record as
	// the webhook package writes it: the key is a hash of its URL).
	const hook = "http://127.0.0.1:1/alerts"
	h := sha256.Sum256([]byte(hook))
	val, err := json.Marshal(map[string]any{"webhook": hook, "seq": page.Events[1].Seq})
	require.NoError(t, err)
	_, ok, err := store.SwapRecord(ctx, "webhook/"+hex.EncodeToString(h[:16]), val, 0)
	require.NoError(t, err)
	require.True(t, ok)
	wcfg := webhook.DefaultConfig()
	wcfg.Store, wcfg.URLs, wcfg.Secret = store, []string{hook}, []byte("secret")
	alerts, err := webhook.New(wcfg)
	require.NoError(t, err)

	var logs bytes.Buffer
	cfg := DefaultConfig()
	cfg.Store, cfg.Keyring, cfg.Alerts = store, age.New(), alerts
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cfg.RetainEvents = 24 * time.Hour
	s, err := New(cfg)
	require.NoError(t, err)

	require.Zero(t, s.pruneRound(ctx, 0))
	left, err := store.Events(ctx, backends.EventFilter{})
	require.NoError(t, err)
	require.Equal(t, page.Events[2:], left.Events, "the events the webhook has not delivered stay")
	require.Equal(t, 2.0, counted(t, s))
	require.Equal(t, 1, strings.Count(logs.String(), "pruned events past their retention"), logs.String())
	require.Contains(t, logs.String(), "events=2")

	// Nothing more to prune: no count, no line.
	s.pruneRound(ctx, 0)
	require.Equal(t, 2.0, counted(t, s))
	require.Equal(t, 1, strings.Count(logs.String(), "pruned events past their retention"))

	// Without the webhook, the rest goes.
	cfg.Alerts = nil
	s2, err := New(cfg)
	require.NoError(t, err)
	s2.pruneRound(ctx, 0)
	require.Equal(t, 2.0, counted(t, s2))
	left, err = store.Events(ctx, backends.EventFilter{})
	require.NoError(t, err)
	require.Empty(t, left.Events)
}

// counted reads s's count of pruned events.
func counted(t *testing.T, s *Server) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, s.metrics.pruned.Write(&m))
	return m.GetCounter().GetValue()
}
