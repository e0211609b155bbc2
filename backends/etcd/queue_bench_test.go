package etcd

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// BenchmarkFindNextQueue measures findNext (p50, p90) on a job whose
// candidate range holds, besides the chunks claimed, either many queued
// chunks (claimable, after the claimed ones in dataid order) or many
// deleted candidates not yet compacted (before them). etcd answers a
// limited range read after visiting every key of the range, live or deleted,
// to count it: this is what these sizes show. Compaction removes deleted
// candidates for good (shown by the "compacted" case). Run it with a fixed
// count, e.g.
//
//	go test ./backends/etcd/ -run '^$' -bench FindNextQueue -benchtime 1000x
func BenchmarkFindNextQueue(b *testing.B) {
	const big = 100_000
	cases := []queueCase{
		{"queued=0", 0, 0, false},
		{fmt.Sprintf("queued=%d", big), big, 0, false},
		{fmt.Sprintf("deleted=%d", big), 0, big, false},
		{fmt.Sprintf("deleted=%d,compacted", big), 0, big, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			cli, be := privateBackend(b)
			s := engine.New(be)
			defer s.Close()
			if err := c.seed(ctx, s, be, cli); err != nil {
				b.Fatal(err)
			}
			measureFindNext(b, ctx, s)
		})
	}
}

// queueCase is a findNext queue of BenchmarkFindNextQueue.
type queueCase struct {
	name              string
	queued, tombstone int
	compact           bool
}

// seed defines job "job" (src → out) and fills its queue as c says.
func (c queueCase) seed(ctx context.Context, s backends.Store, be *Backend, cli *clientv3.Client) error {
	for _, d := range []string{"src", "out"} {
		if _, err := s.UpsertDataset(ctx, backends.Dataset{ID: d}); err != nil {
			return err
		}
	}
	if _, err := s.UpsertJob(ctx, backends.Job{ID: "job", Inputs: []string{"src"}, Output: "out"}); err != nil {
		return err
	}
	// Deleted candidates sort first (7-digit dataids), the measured
	// chunks next (8 digits), the queue last (9 digits).
	if err := seedCandidates(ctx, be, 1_000_000, c.tombstone, false); err != nil {
		return err
	}
	if err := seedCandidates(ctx, be, 100_000_000, c.queued, true); err != nil {
		return err
	}
	if c.compact {
		resp, err := cli.Get(ctx, "compact-probe")
		if err != nil {
			return err
		}
		if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
			return err
		}
	}
	return nil
}

// measureFindNext publishes b.N chunks and times a findNext of each,
// completing it outside the timer.
func measureFindNext(b *testing.B, ctx context.Context, s backends.Store) {
	for i := range b.N {
		if _, err := s.Publish(ctx, "src", strconv.Itoa(10_000_000+i)); err != nil {
			b.Fatal(err)
		}
	}
	timeFindNext(b, ctx, s, func(cl *backends.Claim) error {
		if len(cl.DataID) != 8 {
			return fmt.Errorf("findNext claimed %s, not a measured chunk", cl.DataID)
		}
		return nil
	})
}

// timeFindNext claims b.N chunks of job "job", timing each findNext alone
// (the completion after it is not timed), and reports the p50 and p90
// latency. check, when not nil, vets each claim.
func timeFindNext(b *testing.B, ctx context.Context, s backends.Store, check func(*backends.Claim) error) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		cl, err := s.FindNext(ctx, "job", "bench")
		d := time.Since(t0)
		if err != nil || cl == nil {
			b.Fatalf("findNext: %v %v", cl, err)
		}
		if check != nil {
			if err := check(cl); err != nil {
				b.Fatal(err)
			}
		}
		lat = append(lat, d)
		b.StopTimer()
		if err := s.Complete(ctx, cl.Token); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds()), "p90-µs")
}

// seedCandidates writes n candidates of job "job" for dataids from, from+1,
// ...: with keep, claimable ones (their src chunk READY); without, deleted
// again at once (tombstones until the next compaction).
func seedCandidates(ctx context.Context, be *Backend, from, n int, keep bool) error {
	now := backends.SystemClock{}.Now()
	per := be.cfg.MaxTxnOps / 2
	for lo := 0; lo < n; lo += per {
		var puts, dels []clientv3.Op
		for i := lo; i < min(lo+per, n); i++ {
			id := strconv.Itoa(from + i)
			key := be.candKey(backends.Candidate{Job: "job", DataID: id})
			puts = append(puts, clientv3.OpPut(key, ""))
			if keep {
				src := backends.StatusRow{RowKey: backends.RowKey{Dataset: "src", DataID: id, Role: backends.RoleOutput}, Status: backends.StatusReady, UpdatedAt: now}
				puts = append(puts, clientv3.OpPut(be.rowKey(src.RowKey), string(encodeRow(src))))
			} else {
				dels = append(dels, clientv3.OpDelete(key))
			}
		}
		for _, ops := range [][]clientv3.Op{puts, dels} {
			if len(ops) == 0 {
				continue
			}
			if _, err := be.cli.Txn(ctx).Then(ops...).Commit(); err != nil {
				return err
			}
		}
	}
	return nil
}
