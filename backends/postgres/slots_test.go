package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/stretchr/testify/require"
)

// A slot record is known to exist, and no longer created before it is
// locked, only once a transaction that found or created it committed: a
// record created by a transaction that rolled back is gone, and a claim
// that skipped creating it would have no row to lock.
func TestSlotRecordsKnownOnlyOnceCommitted(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	known := func(key string) bool { _, ok := b.slotRows.Load(key); return ok }

	rolledBack := errors.New("rolled back")
	err = b.Update(ctx, func(tx backends.Tx) error {
		got, err := tx.GetSlots(ctx, []string{"job/a"}, true)
		require.NoError(t, err)
		require.NotNil(t, got[0], "the record created for the lock is read back")
		return rolledBack
	})
	require.ErrorIs(t, err, rolledBack)
	require.False(t, known("job/a"), "a record created by a rolled back transaction is known to exist")
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM slots WHERE key = 'job/a'").Scan(&n))
	require.Zero(t, n)

	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		_, err := tx.GetSlots(ctx, []string{"job/a"}, true)
		return err
	}))
	require.True(t, known("job/a"), "a record created by a committed transaction is not known")

	// A record written is read back as written (by the next transaction,
	// from the codec's memory of the bytes).
	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		got, err := tx.GetSlots(ctx, []string{"job/a"}, true)
		if err != nil {
			return err
		}
		require.NotNil(t, got[0])
		got[0].Holders = append(got[0].Holders, backends.SlotHolder{Job: "a", Dataset: "out", DataID: "1", Token: backends.NewToken("a", "out", "1", 1)})
		return tx.PutSlots(ctx, *got[0])
	}))
	require.NoError(t, b.Update(ctx, func(tx backends.Tx) error {
		got, err := tx.GetSlots(ctx, []string{"job/a"}, true)
		if err != nil {
			return err
		}
		require.Len(t, got[0].Holders, 1)
		require.Equal(t, "1", got[0].Holders[0].DataID)
		return nil
	}))
}

func TestFrontierStoredWithCatalog(t *testing.T) {
	b, err := Open(context.Background(), Config{DSN: testDSN(t), Schema: freshSchema(t)})
	require.NoError(t, err)
	defer b.Close()
	backendtest.FrontierStoredWithCatalog(t, b)
}
