// Package webhook delivers alerts to HTTP endpoints: a chunk put on HOLD, a
// claim that failed, a claim lost to lease expiry, and a late chunk (SPEC
// §8). Each alert is a JSON body POSTed with HMAC-SHA256 signatures (one
// covering a timestamp, see sign.go), retried with exponential backoff
// until the endpoint answers 2xx.
//
// Each webhook's alerts are two streams, each delivered in its own order
// and on its own, so that neither waits for the other: transitions (hold,
// fail, lease_expired), in the order of the event log, and deadlines
// (late, late_summary), dataset by dataset in dataid order.
//
// Delivery is driven by the store, not by the process: transitions come
// from the event log, deadlines from the partition definitions, and each
// stream of each webhook URL has a record in the store (backends.Record)
// holding its cursor, advanced after every delivery, and the name of the
// replica that delivers it. Replicas sharing a store elect that replica
// through the record's compare-and-swap (a lease, see worker); a restarted
// server resumes at the cursor. An alert is sent again only when a replica
// stops between a send and the write of the cursor; its Chunklock-Event-Id
// lets the receiver drop the copy.
package webhook

import (
	"fmt"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Kinds of alert.
const (
	// KindHold: a chunk was put on HOLD by an operator (hold, holdRange).
	KindHold = "hold"
	// KindFail: a claim failed (the runner called fail); Status is FAILED,
	// or HOLD when its attempts are exhausted.
	KindFail = "fail"
	// KindLeaseExpired: a claim was lost to lease expiry (the reaper
	// failed it); Status is FAILED, or HOLD when its attempts are
	// exhausted.
	KindLeaseExpired = "lease_expired"
	// KindLate: a chunk of a dataset with a deadline was not READY when
	// its window's end + deadline passed.
	KindLate = "late"
	// KindLateSummary: more chunks of one dataset than Config.LateCap
	// became late at once (their deadlines passed while no server
	// watched): one alert counts them (Count), from DataID to LastDataID,
	// instead of one alert each.
	KindLateSummary = "late_summary"
)

// Alert is the JSON body of a delivery.
type Alert struct {
	// ID is stable: the same alert always has the same id ("event/<seq>"
	// for a transition of the event log, "late/<dataset>/<dataid>" for a
	// late chunk). It is also sent in the Chunklock-Event-Id header.
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Dataset string `json:"dataset"`
	DataID  string `json:"dataid"`
	// Job is the job whose claim the alert is about; for hold and late,
	// the dataset's producing job ("" for a source dataset).
	Job string `json:"job"`
	// Status is the chunk's OUTPUT status the transition led to (late:
	// the status when the deadline was checked, NONE when missing).
	Status   string `json:"status"`
	Reason   string `json:"reason,omitempty"`
	Attempt  int    `json:"attempt"`
	Executor string `json:"executor,omitempty"`
	// Actor is who made the transition (late: "chunklock").
	Actor string `json:"actor"`
	// Time is when the transition was recorded, or, for a late chunk, when
	// its deadline passed.
	Time time.Time `json:"time"`
	// Seq is the event's position in the event log (0 for late chunks).
	Seq int64 `json:"seq,omitempty"`
	// Count and LastDataID: of a late_summary, how many chunks are late,
	// DataID the first of them and LastDataID the last.
	Count      int    `json:"count,omitempty"`
	LastDataID string `json:"lastDataid,omitempty"`
}

// reaperActor is the actor of the reaper's transitions (backends'
// ExpireLeases).
const reaperActor = "reaper"

// alertOf tells whether event e is an alert, and which.
func alertOf(e backends.Event) (Alert, bool) {
	if e.Role != backends.RoleOutput {
		return Alert{}, false
	}
	var kind string
	switch {
	case e.From == backends.StatusRunning && (e.To == backends.StatusFailed || e.To == backends.StatusHold):
		kind = KindFail
		if e.Actor == reaperActor && e.Reason == backends.ReasonLeaseExpired {
			kind = KindLeaseExpired
		}
	case e.To == backends.StatusHold && e.From != backends.StatusHold:
		kind = KindHold
	default:
		return Alert{}, false
	}
	return Alert{
		ID: fmt.Sprintf("event/%d", e.Seq), Kind: kind, Dataset: e.Dataset, DataID: e.DataID, Job: e.Job,
		Status: string(e.To), Reason: e.Reason, Attempt: e.Attempt, Executor: e.Executor, Actor: e.Actor,
		Time: e.Time.UTC(), Seq: e.Seq,
	}, true
}

// lateAlert is the alert of a late chunk.
func lateAlert(p backends.Partition, job string, deadline time.Duration) Alert {
	status := string(p.Status)
	if p.Status == backends.StatusNone {
		status = "NONE"
	}
	return Alert{
		ID: "late/" + p.Dataset + "/" + p.DataID, Kind: KindLate, Dataset: p.Dataset, DataID: p.DataID, Job: job,
		Status: status, Reason: fmt.Sprintf("not READY %s after its window ended", deadline),
		Actor: "chunklock", Time: p.WindowEnd.Add(deadline).UTC(),
	}
}

// lateSummary is the alert of n late chunks of one dataset, first to
// last, instead of n alerts.
func lateSummary(first, last backends.Partition, n int, job string, deadline time.Duration) Alert {
	return Alert{
		ID: "late/" + first.Dataset + "/" + first.DataID + ".." + last.DataID, Kind: KindLateSummary,
		Dataset: first.Dataset, DataID: first.DataID, LastDataID: last.DataID, Count: n, Job: job,
		Reason: fmt.Sprintf("%s chunks of %s are late: not READY %s after their windows ended, %s to %s",
			thousands(n), first.Dataset, deadline, first.DataID, last.DataID),
		Actor: "chunklock", Time: last.WindowEnd.Add(deadline).UTC(),
	}
}

// thousands writes n with a comma every three digits (1,353).
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
