package pipeline

import (
	"fmt"

	"github.com/chunklock/chunklock/backends"
)

// Pool declares a pool of slots shared by the jobs naming it:
//
//	pools:
//	  - id: warehouse
//	    slots: 4
//	    description: the warehouse takes four loads at a time
//	jobs:
//	  - id: load
//	    pool: warehouse
//	    maxConcurrent: 2
type Pool struct {
	ID          string `yaml:"id"`
	Slots       int    `yaml:"slots"`
	Description string `yaml:"description"`
}

// Backend converts a pool declaration.
func (p Pool) Backend() backends.Pool {
	return backends.Pool{ID: p.ID, Slots: p.Slots, Description: p.Description}
}

// Pool returns the declared pool of id (zero when there is none).
func (p *Pipeline) Pool(id string) Pool {
	for _, pl := range p.Pools {
		if pl.ID == id {
			return pl
		}
	}
	return Pool{}
}

// validatePools checks the pools on their own: each valid, declared once.
func (p *Pipeline) validatePools() []error {
	var errs []error
	seen := map[string]bool{}
	for _, pl := range p.Pools {
		if seen[pl.ID] {
			errs = append(errs, fmt.Errorf("pool %q is declared twice", pl.ID))
		}
		seen[pl.ID] = true
		if err := backends.ValidatePool(pl.Backend()); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ValidatePoolsAgainst checks that every pool a job names is declared in
// the pipeline or exists on the server (pools: the server's).
func (p *Pipeline) ValidatePoolsAgainst(pools []backends.Pool) error {
	known := map[string]bool{}
	for _, pl := range pools {
		known[pl.ID] = true
	}
	for _, pl := range p.Pools {
		known[pl.ID] = true
	}
	for _, j := range p.OrderedJobs() {
		if j.Pool != "" && !known[j.Pool] {
			return fmt.Errorf("job %q names pool %q, which is neither declared under pools: nor on the server", j.ID, j.Pool)
		}
	}
	return nil
}

// PlanPools compares the pipeline's pools with the server's (current) and
// returns their changes, to apply before any job: a job may name a pool
// only once it exists.
func (p *Pipeline) PlanPools(current []backends.Pool) []Change {
	have := map[string]backends.Pool{}
	for _, pl := range current {
		have[pl.ID] = pl
	}
	var out []Change
	for _, pl := range p.Pools {
		h, ok := have[pl.ID]
		if !ok {
			out = append(out, Change{Kind: "pool", ID: pl.ID, Action: Create})
			continue
		}
		var fields []string
		if h.Slots != pl.Slots {
			fields = append(fields, "slots")
		}
		if h.Description != pl.Description {
			fields = append(fields, "description")
		}
		act := Unchanged
		if len(fields) > 0 {
			act = Update
		}
		out = append(out, Change{Kind: "pool", ID: pl.ID, Action: act, Fields: fields})
	}
	return out
}
