package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// The member's database against its quota. etcd keeps everything in one
// bbolt file and counts the file's size against --quota-backend-bytes;
// past the quota it raises the NOSPACE alarm and refuses every write until
// the alarm is disarmed. Compaction (every CompactionRetention) frees pages
// inside the file but never shrinks it: only a defragmentation gives them
// back. So the member watches its space every SpaceInterval: it
// defragments when that gives back enough (reclaim), disarms NOSPACE once
// the file is below the quota again (after a defragmentation, or a restart
// with a larger quota), and logs a warning from WarnFraction of the quota.

// WarnFraction is the share of the quota from which the space is worth a
// warning (the log, /readyz).
const WarnFraction = 0.8

// Space is the member's database against its quota.
type Space struct {
	// Size is the database file's size: what the quota counts.
	Size int64
	// InUse is the part of it in use; Size-InUse is what a
	// defragmentation gives back.
	InUse int64
	// Quota is the member's --quota-backend-bytes.
	Quota int64
	// NoSpace tells that the NOSPACE alarm is raised: every write is
	// refused until it is disarmed.
	NoSpace bool
}

// Fraction is Size against Quota.
func (s Space) Fraction() float64 {
	if s.Quota <= 0 {
		return 0
	}
	return float64(s.Size) / float64(s.Quota)
}

// Warning describes a space worth a warning (NOSPACE, or from
// WarnFraction of the quota) with what to do; "" otherwise.
func (s Space) Warning() string {
	switch {
	case s.NoSpace:
		return fmt.Sprintf("the embedded store is out of space (NOSPACE: %s of its %s quota): every write is refused; "+
			"restart chunklock serve with a larger --etcd-quota-backend-bytes (the server needs about 6.5 KB of memory a chunk), "+
			"or move the store to PostgreSQL with chunklock store copy (README: Outgrowing the embedded store)",
			Bytes(s.Size), Bytes(s.Quota))
	case s.Fraction() >= WarnFraction:
		return fmt.Sprintf("the embedded store uses %.0f%% of its quota (%s of %s): at the quota it refuses every write; "+
			"raise --etcd-quota-backend-bytes or move the store to PostgreSQL with chunklock store copy (README: Outgrowing the embedded store)",
			100*s.Fraction(), Bytes(s.Size), Bytes(s.Quota))
	}
	return ""
}

// Bytes formats a size in binary units.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// Space reads the member's space; the zero Space once it is closed.
func (s *Server) Space() Space {
	e := s.etcd()
	if e == nil {
		return Space{}
	}
	be := e.Server.Backend()
	sp := Space{Size: be.Size(), InUse: be.SizeInUse(), Quota: s.cfg.QuotaBackendBytes}
	for _, a := range e.Server.Alarms() {
		if a.Alarm == pb.AlarmType_NOSPACE {
			sp.NoSpace = true
		}
	}
	return sp
}

// Reclaimed tells what one Reclaim did.
type Reclaimed struct {
	Before, After Space
	// Defragmented tells that the database was defragmented, Disarmed
	// that the NOSPACE alarm was.
	Defragmented, Disarmed bool
	Took                   time.Duration
}

// worthDefragmenting tells whether a defragmentation of sp gives back
// enough to pay for the pause it makes (the member serves nothing while
// it copies the pages in use): at least DefragMinBytes and a quarter of
// the file, or, from WarnFraction of the quota or at NOSPACE, a twentieth.
func (c Config) worthDefragmenting(sp Space) bool {
	free := sp.Size - sp.InUse
	if free < c.DefragMinBytes {
		return false
	}
	if sp.NoSpace || sp.Fraction() >= WarnFraction {
		return free*20 >= sp.Size
	}
	return free*4 >= sp.Size
}

// Reclaim defragments the database when that gives back enough space
// (worthDefragmenting), then disarms the NOSPACE alarm if the file is
// below the quota by a margin (the quota's twentieth, so that a full store
// is not disarmed for one write at a time).
func (s *Server) Reclaim(ctx context.Context) (Reclaimed, error) {
	s.reclaimMu.Lock()
	defer s.reclaimMu.Unlock()
	e := s.etcd()
	if e == nil {
		return Reclaimed{}, fmt.Errorf("embedded etcd: closed")
	}
	start := time.Now()
	r := Reclaimed{Before: s.Space()}
	if s.cfg.worthDefragmenting(r.Before) {
		if err := e.Server.Defragment(); err != nil {
			return r, fmt.Errorf("embedded etcd: defragmentation: %w", err)
		}
		r.Defragmented = true
	}
	sp := s.Space()
	if sp.NoSpace && sp.Size+sp.Quota/20 < sp.Quota {
		_, err := e.Server.Alarm(ctx, &pb.AlarmRequest{Action: pb.AlarmRequest_DEACTIVATE,
			MemberID: uint64(e.Server.MemberID()), Alarm: pb.AlarmType_NOSPACE})
		if err != nil {
			return r, fmt.Errorf("embedded etcd: disarming NOSPACE: %w", err)
		}
		r.Disarmed = true
	}
	r.After, r.Took = s.Space(), time.Since(start)
	return r, nil
}

// watchSpace runs Reclaim every SpaceInterval until stop is closed,
// logging what it did and a warning from WarnFraction of the quota (when
// the space first gets there, then every WarnEvery while it stays).
func (s *Server) watchSpace(stop <-chan struct{}) {
	log := s.cfg.Logger
	t := time.NewTicker(s.cfg.SpaceInterval)
	defer t.Stop()
	var warned time.Time
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := s.Reclaim(ctx)
		cancel()
		if err != nil {
			log.Warn("embedded store: reclaiming space failed; trying again later", "err", err)
			continue
		}
		logReclaimed(log, r)
		switch w := r.After.Warning(); {
		case w == "":
			warned = time.Time{}
		case warned.IsZero() || time.Since(warned) >= s.cfg.WarnEvery:
			log.Warn(w, "size", r.After.Size, "in_use", r.After.InUse, "quota", r.After.Quota)
			warned = time.Now()
		}
	}
}

func logReclaimed(log *slog.Logger, r Reclaimed) {
	if r.Defragmented {
		log.Info("embedded store defragmented", "before", Bytes(r.Before.Size), "after", Bytes(r.After.Size), "took", r.Took.Round(time.Millisecond))
	}
	if r.Disarmed {
		log.Info("embedded store: below its quota again, writes accepted (NOSPACE disarmed)", "size", Bytes(r.After.Size), "quota", Bytes(r.After.Quota))
	}
}
