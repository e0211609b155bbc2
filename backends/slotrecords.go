package backends

import (
	"encoding/json"
	"fmt"
	"time"
)

// Pool is a named set of slots shared by the jobs naming it (SPEC §1).
type Pool struct {
	ID          string
	Description string
	Slots       int
	// Pipeline names the pipeline whose apply created the pool, as
	// Dataset.Pipeline.
	Pipeline  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SlotHolder is a live claim holding a slot.
type SlotHolder struct {
	Job     string
	Dataset string
	DataID  string
	Token   string
	// LeaseExpiresAt is the claim's lease when the holder was written or
	// last checked; a heartbeat since may have extended it.
	LeaseExpiresAt time.Time
}

// holderJSON is a holder as backends that store JSON keep it: its token
// names the claim's OUTPUT row, so the token and the lease (in
// microseconds) are all a record needs, and records stay small.
type holderJSON struct {
	Token string `json:"t"`
	Lease int64  `json:"l"`
}

// MarshalJSON stores the token and the lease.
func (h SlotHolder) MarshalJSON() ([]byte, error) {
	return json.Marshal(holderJSON{Token: h.Token, Lease: h.LeaseExpiresAt.UnixMicro()})
}

// UnmarshalJSON reads what MarshalJSON stored.
func (h *SlotHolder) UnmarshalJSON(b []byte) error {
	var v holderJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	k, _, err := ParseToken(v.Token)
	if err != nil {
		return fmt.Errorf("slot holder: %w", err)
	}
	*h = SlotHolder{Job: k.Job, Dataset: k.Dataset, DataID: k.DataID, Token: v.Token, LeaseExpiresAt: time.UnixMicro(v.Lease).UTC()}
	return nil
}

// Slots is the slot record of a job ("job/<id>") or of a pool
// ("pool/<id>"). A pool's record carries its definition; Pool.Slots is
// zero when no pool of that id was ever defined.
type Slots struct {
	Key     string
	Pool    Pool
	Holders []SlotHolder
	// Ended lists, in an ended record, the tokens of claims that ended
	// while the slot record still listed them (slotReleases).
	Ended []string `json:",omitempty"`
	// Seeded tells, by job, the catalog version whose definition of the
	// job the holders account for: after any catalog change, a job's
	// holders are rebuilt from its RUNNING claims before a claim counts
	// them (seed).
	Seeded map[string]int64
}

// JobSlotsKey and PoolSlotsKey name slot records.
func JobSlotsKey(job string) string { return "job/" + job }

// PoolSlotsKey names the slot record of a pool.
func PoolSlotsKey(pool string) string { return "pool/" + pool }
