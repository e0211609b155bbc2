package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestPeekRowsFirstReadPinsSnapshot: PeekRows reads "at the transaction's
// snapshot"; when it is the transaction's first read (a claim or a force
// whose first input is read through LATEST: latestRead peeks before any
// other read), it must fix that snapshot, so that the rows the transaction
// reads next are of the same revision. Otherwise a row committed between
// the peek and the next read is missing from the one and present in the
// other: a claim may pick an older snapshot than one READY at the
// revision of every other row it reads.
func TestPeekRowsFirstReadPinsSnapshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := OpenClient(ctx, testClient, freshConfig())
	require.NoError(t, err)
	defer b.Close()
	k := backends.RowKey{Dataset: "dim", DataID: "2026-01-01", Role: backends.RoleOutput}
	other := backends.RowKey{Dataset: "out", DataID: "2026-01-01", Job: "j", Role: backends.RoleOutput}
	attempts := 0
	var peeked, read []*backends.StatusRow
	err = b.Update(ctx, func(tx backends.Tx) error {
		attempts++
		var err error
		if peeked, err = tx.PeekRows(ctx, []backends.RowKey{k}); err != nil {
			return err
		}
		if attempts == 1 {
			// Another transaction publishes the snapshot meanwhile.
			require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
				return tx.PutRow(ctx, backends.StatusRow{RowKey: k, Status: backends.StatusReady, UpdatedAt: time.Now()})
			}))
		}
		if read, err = tx.GetRows(ctx, []backends.RowKey{k, other}); err != nil {
			return err
		}
		return tx.PutRow(ctx, backends.StatusRow{RowKey: other, Status: backends.StatusRunning, UpdatedAt: time.Now()})
	})
	require.NoError(t, err)
	require.Equal(t, read[0] == nil, peeked[0] == nil,
		"one transaction (attempt %d) peeked the row as missing and read it READY: the peek was not at the snapshot of its reads", attempts)
}
