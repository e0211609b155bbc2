package backendtest

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// Records (backends/records.go): reads, compare-and-swap writes, bounds,
// and a swap race on one store (RunConcurrency) and on two stores sharing
// a backend (RunSharedCatalog).

var recordTests = []testCase{
	{"RecordNeverWritten", func(s *suite, t *testing.T) {
		b := s.setup(t)
		r, err := b.s.Record(b.ctx, "webhook/a")
		require.NoError(t, err)
		require.Equal(t, "webhook/a", r.Key)
		require.Zero(t, r.Version)
		require.Empty(t, r.Value)
	}},
	{"RecordSwap", func(s *suite, t *testing.T) {
		b := s.setup(t)
		one, ok, err := b.s.SwapRecord(b.ctx, "webhook/a", []byte("one"), 0)
		require.NoError(t, err)
		require.True(t, ok)
		require.Positive(t, one.Version)
		require.Equal(t, []byte("one"), one.Value)

		got, err := b.s.Record(b.ctx, "webhook/a")
		require.NoError(t, err)
		require.Equal(t, one.Version, got.Version)
		require.Equal(t, []byte("one"), got.Value)

		// Creating it again, or writing at a version it no longer has,
		// writes nothing and answers the record as stored.
		cur, ok, err := b.s.SwapRecord(b.ctx, "webhook/a", []byte("again"), 0)
		require.NoError(t, err)
		require.False(t, ok)
		require.Equal(t, one.Version, cur.Version)
		require.Equal(t, []byte("one"), cur.Value)

		two, ok, err := b.s.SwapRecord(b.ctx, "webhook/a", []byte("two"), one.Version)
		require.NoError(t, err)
		require.True(t, ok)
		require.Greater(t, two.Version, one.Version)

		cur, ok, err = b.s.SwapRecord(b.ctx, "webhook/a", []byte("stale"), one.Version)
		require.NoError(t, err)
		require.False(t, ok)
		require.Equal(t, two.Version, cur.Version)
		require.Equal(t, []byte("two"), cur.Value)

		// An empty value is a value; other keys are untouched.
		empty, ok, err := b.s.SwapRecord(b.ctx, "webhook/a", nil, two.Version)
		require.NoError(t, err)
		require.True(t, ok)
		got, err = b.s.Record(b.ctx, "webhook/a")
		require.NoError(t, err)
		require.Equal(t, empty.Version, got.Version)
		require.Empty(t, got.Value)
		other, err := b.s.Record(b.ctx, "webhook/b")
		require.NoError(t, err)
		require.Zero(t, other.Version)
	}},
	{"RecordBounds", func(s *suite, t *testing.T) {
		b := s.setup(t)
		for _, key := range []string{"", "has space", "nul\x00", "é", strings.Repeat("k", backends.MaxRecordKeyBytes+1)} {
			_, err := b.s.Record(b.ctx, key)
			require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "key %q", key)
			_, _, err = b.s.SwapRecord(b.ctx, key, []byte("v"), 0)
			require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "key %q", key)
		}
		_, _, err := b.s.SwapRecord(b.ctx, "k", make([]byte, backends.MaxRecordValueBytes+1), 0)
		require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err))
		_, _, err = b.s.SwapRecord(b.ctx, "k", []byte("v"), -1)
		require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err))
		big := make([]byte, backends.MaxRecordValueBytes)
		big[len(big)-1] = 7
		_, ok, err := b.s.SwapRecord(b.ctx, strings.Repeat("k", backends.MaxRecordKeyBytes), big, 0)
		require.NoError(t, err)
		require.True(t, ok)
		r, err := b.s.Record(b.ctx, strings.Repeat("k", backends.MaxRecordKeyBytes))
		require.NoError(t, err)
		require.Equal(t, big, r.Value)
	}},
}

func init() {
	concurrencyTests = append(concurrencyTests,
		testCase{"RecordSwapRace", func(s *suite, t *testing.T) { b := s.setup(t); recordSwapRace(t, b.s) }})
}

// recordSwapRace: goroutines on the stores each add one to a counter
// record many times, by read and swap, reading again when a swap loses.
// No increment is lost and none counted twice.
func recordSwapRace(t *testing.T, stores ...backends.Store) {
	ctx := context.Background()
	const workers, adds = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := stores[w%len(stores)]
			for range adds {
				for {
					r, err := st.Record(ctx, "counter")
					if err != nil {
						errs <- err
						return
					}
					var n uint64
					if len(r.Value) == 8 {
						n = binary.BigEndian.Uint64(r.Value)
					}
					_, ok, err := st.SwapRecord(ctx, "counter", binary.BigEndian.AppendUint64(nil, n+1), r.Version)
					if err != nil {
						errs <- err
						return
					}
					if ok {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	r, err := stores[0].Record(ctx, "counter")
	require.NoError(t, err)
	require.Equal(t, uint64(workers*adds), binary.BigEndian.Uint64(r.Value))
}
