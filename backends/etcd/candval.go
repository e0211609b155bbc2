package etcd

import (
	"context"
	"encoding/json"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// A candidate's value is empty for a plain hint, and otherwise holds what
// its key does not: when it is due and whether it is a schedule's
// frontier. Candidates not due yet stay in their place in the queue and
// are passed over by the reads.
type candVal struct {
	B int64 `json:"b,omitempty"` // NotBefore, Unix microseconds
	F bool  `json:"f,omitempty"` // Frontier
}

func encodeCand(c backends.Candidate) []byte {
	if c.NotBefore.IsZero() && !c.Frontier {
		return nil
	}
	v, _ := json.Marshal(candVal{B: micros(c.NotBefore), F: c.Frontier})
	return v
}

// decodeCand fills in c what the value val says; a corrupt value reads as
// a plain hint (findNext checks every candidate anyway).
func decodeCand(c *backends.Candidate, val []byte) {
	if len(val) == 0 {
		return
	}
	var v candVal
	if json.Unmarshal(val, &v) == nil {
		c.NotBefore, c.Frontier = fromMicros(v.B), v.F
	}
}

// notDue tells whether the candidate with value val is hidden at now.
func notDue(val []byte, now time.Time) bool {
	if len(val) == 0 {
		return false
	}
	var c backends.Candidate
	decodeCand(&c, val)
	return now.Before(c.NotBefore)
}

// CountCandidates counts job's candidates (Backend.CountCandidates).
func (b *Backend) CountCandidates(ctx context.Context, job string) (int, error) {
	resp, err := b.get(ctx, b.key("cand", job)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return int(resp.Count), nil
}
