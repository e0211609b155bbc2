package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// layout is the pipeline a run builds: as many sources as products, both
// with HOURLY definitions from one start, and product i made by job i from
// source i, one to one. The seeded history is hours [0, hours) of every
// source; job i has consumed hours [0, hours-lag(i)) and has the rest
// queued. Traffic publishes hours from `hours` on, at most `spare` of them
// per source; the hours after those, up to the last whole hour before the
// run, stay missing (and late, past the sources' deadline).
type layout struct {
	pairs int       // sources = products = jobs
	hours int       // seeded chunks per source
	spare int       // hours after the seeded ones that traffic may publish
	start time.Time // the first hour of every definition
}

// newLayout places hours+spare+missingHours whole hours before now.
func newLayout(pairs, hours, spare int, now time.Time) layout {
	last := now.UTC().Truncate(time.Hour)
	start := last.Add(-time.Duration(hours+spare+missingHours) * time.Hour)
	return layout{pairs: pairs, hours: hours, spare: spare, start: start}
}

// missingHours is how many due hours after the spare ones no one publishes.
const missingHours = 24

// deadlineSeconds is the sources' deadline: an hour not READY two hours
// after its end is late.
const deadlineSeconds = 7200

func (l layout) source(i int) string  { return fmt.Sprintf("source-%03d", i) }
func (l layout) product(i int) string { return fmt.Sprintf("product-%03d", i) }
func (l layout) job(i int) string     { return fmt.Sprintf("produce-%03d", i) }

// dataid is hour h's dataid (HOURLY, UTC).
func (l layout) dataid(h int) string {
	return l.start.Add(time.Duration(h) * time.Hour).Format("2006-01-02T15")
}

// lag is how many of the last seeded hours of its source job i has not
// consumed: they wait in its queue.
func (l layout) lag(i int) int { return min(1+i%4, l.hours) }

// consumed is how many hours job i has produced in the seeded history.
func (l layout) consumed(i int) int { return l.hours - l.lag(i) }

// chunks is how many chunks the seeded history holds.
func (l layout) chunks() int {
	n := l.pairs * l.hours
	for i := range l.pairs {
		n += l.consumed(i)
	}
	return n
}

// executor is the runner name of job i's claims in the seeded history, as
// `chunklock run` makes one: a host, a process id and a random suffix.
func (l layout) executor(i int) string {
	return fmt.Sprintf("batch-%02d.example.internal-%d-%06x", i%8, 41000+i, uint32(i)*2654435761>>8)
}

// sortKey is the key that orders dataids shortlex in both stores: a
// three-digit length, then the dataid.
func sortKey(dataid string) string { return fmt.Sprintf("%03d%s", len(dataid), dataid) }

// The seeded history's times, relative to the end of an hour's window: a
// source hour is published 5 minutes after it ends, claimed a minute
// later and completed two minutes after that.
const (
	publishAfter  = 5 * time.Minute
	claimAfter    = 6 * time.Minute
	completeAfter = 8 * time.Minute
)

// Actors of the seeded history's events: the names of the tokens a
// publisher and the runners would use.
const (
	publisherActor = "publisher"
	runnerActor    = "runner"
)

// row is one status row of the seeded history.
type row struct {
	dataset, dataid, job string
	input                bool
	status               string // READY (OUTPUT) or DONE (INPUT)
	attempt              int
	executor, token      string
	fence                int64
	updated              time.Time
	ended                string // how the claim of token ended: COMPLETE on a produced OUTPUT row
}

// event is one event of the seeded history.
type event struct {
	seq                               int64
	at                                time.Time
	actor, job, dataset, dataid, role string
	from, to                          string
	attempt                           int
	executor                          string
}

// candidate is a queued hint that job may claim dataid.
type candidate struct{ job, dataid string }

// history generates the seeded history in the order it would have
// happened: hour by hour, in each hour every source's publish, then every
// claim, then every completion. Event seqs count from 1 in that order, so
// that they sit below every seq a store assigns later.
type history struct {
	l            layout
	globalFences bool // PostgreSQL: one fence sequence; etcd: a counter per chunk
	fence        int64
	seq          int64
	rnd          *rand.Rand
}

func newHistory(l layout, globalFences bool, seed uint64) *history {
	return &history{l: l, globalFences: globalFences, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// hour returns hour h's rows and events.
func (g *history) hour(h int, rows []row, events []event) ([]row, []event) {
	l := g.l
	end := l.start.Add(time.Duration(h+1) * time.Hour)
	id := l.dataid(h)
	pub := end.Add(publishAfter)
	for i := range l.pairs {
		rows = append(rows, row{dataset: l.source(i), dataid: id, status: "READY", updated: pub})
		events = append(events, g.event(pub, publisherActor, "", l.source(i), id, "OUTPUT", "", "READY", 0, ""))
	}
	type claim struct {
		i   int
		out row
	}
	var claimed []claim
	for i := range l.pairs {
		if h >= l.consumed(i) {
			continue
		}
		fence := int64(1)
		if g.globalFences {
			g.fence++
			fence = g.fence
		}
		out := row{dataset: l.product(i), dataid: id, job: l.job(i), status: "READY", attempt: 1,
			executor: l.executor(i), token: g.token(l.job(i), l.product(i), id, fence), fence: fence,
			updated: end.Add(completeAfter), ended: "COMPLETE"}
		claimed = append(claimed, claim{i, out})
		at := end.Add(claimAfter)
		events = append(events,
			g.event(at, runnerActor, out.job, out.dataset, id, "OUTPUT", "", "RUNNING", 1, out.executor),
			g.event(at, runnerActor, out.job, l.source(i), id, "INPUT", "", "RUNNING", 1, out.executor))
	}
	for _, c := range claimed {
		out, in := c.out, c.out
		in.dataset, in.input, in.status, in.ended = l.source(c.i), true, "DONE", ""
		rows = append(rows, out, in)
		events = append(events,
			g.event(out.updated, runnerActor, out.job, in.dataset, id, "INPUT", "RUNNING", "DONE", 1, out.executor),
			g.event(out.updated, runnerActor, out.job, out.dataset, id, "OUTPUT", "RUNNING", "READY", 1, out.executor))
	}
	return rows, events
}

func (g *history) event(at time.Time, actor, job, dataset, dataid, role, from, to string, attempt int, executor string) event {
	g.seq++
	return event{seq: g.seq, at: at, actor: actor, job: job, dataset: dataset, dataid: dataid, role: role,
		from: from, to: to, attempt: attempt, executor: executor}
}

// token is a claim token as the server makes them: "ct1." and the base64url
// of job/dataset/dataid/fence/nonce (12 random bytes in hex).
func (g *history) token(job, dataset, dataid string, fence int64) string {
	var nonce [12]byte
	binary.LittleEndian.PutUint64(nonce[:8], g.rnd.Uint64())
	binary.LittleEndian.PutUint32(nonce[8:], g.rnd.Uint32())
	raw := job + "/" + dataset + "/" + dataid + "/" + strconv.FormatInt(fence, 10) + "/" + hex.EncodeToString(nonce[:])
	return "ct1." + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// candidates are the queued hours: those of its source job i has not
// consumed.
func (l layout) candidates() []candidate {
	var out []candidate
	for i := range l.pairs {
		for h := l.consumed(i); h < l.hours; h++ {
			out = append(out, candidate{job: l.job(i), dataid: l.dataid(h)})
		}
	}
	return out
}
