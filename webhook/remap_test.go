package webhook

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRemapRecord(t *testing.T) {
	plus := func(n int64) int64 { return n + 1000 }
	st := state{Webhook: "https://hooks.example/x", Seq: 42, Late: map[string]string{"src": "2026-01-01"}}
	v, err := json.Marshal(st)
	require.NoError(t, err)
	var got state
	require.NoError(t, json.Unmarshal(RemapRecord(recordKey("https://hooks.example/x"), v, plus), &got))
	want := st
	want.Seq = 1042
	require.Equal(t, want, got, "the seq moves, the rest stays")
	require.Equal(t, v, RemapRecord("other/key", v, plus), "not a webhook's record")
	require.Equal(t, []byte("not json"), RemapRecord("webhook/x", []byte("not json"), plus))
}
