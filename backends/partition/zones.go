package partition

import (
	"archive/zip"
	"bytes"
	_ "embed" // the zone database
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// Time zones come from one database, the copy of the IANA time zone
// database embedded below, on every host: replicas on a host with its own
// zoneinfo and on a scratch container read a definition alike. (The
// time/tzdata package would not do: time.LoadLocation prefers the host's
// files, and the host may have other rules, other names, or none.)
//
// zoneinfo.zip is Go's own build of the database ($GOROOT/lib/time), the
// one time/tzdata embeds; `go generate ./backends/partition/` copies it
// from the Go installation at hand, to take up a newer release of the
// database on purpose.
//
//go:generate sh -c "cp \"$(go env GOROOT)/lib/time/zoneinfo.zip\" zoneinfo.zip && chmod 644 zoneinfo.zip"
//go:embed zoneinfo.zip
var zoneinfoZip []byte

// zoneFiles indexes the embedded database by zone name.
var zoneFiles = sync.OnceValue(func() map[string]*zip.File {
	r, err := zip.NewReader(bytes.NewReader(zoneinfoZip), int64(len(zoneinfoZip)))
	if err != nil {
		panic("partition: the embedded time zone database is unreadable: " + err.Error())
	}
	files := make(map[string]*zip.File, len(r.File))
	for _, f := range r.File {
		if !strings.HasSuffix(f.Name, "/") {
			files[f.Name] = f
		}
	}
	return files
})

// ianaZone says whether name is a zone of the embedded database.
func ianaZone(name string) bool { return zoneFiles()[name] != nil }

// hostOnlyZone resolves a name that some hosts' zoneinfo has beside the
// IANA zones, and that definitions stored before such names were refused
// may carry, to the zone of the embedded database that tells the same
// civil time: posix/X is X; right/X is X counted with leap seconds, which
// chunklock's clock (Unix time) does not count; posixrules stands for
// America/New_York, the rules the IANA build links it to. ok is false for
// any other name.
func hostOnlyZone(name string) (same string, ok bool) {
	if name == "posixrules" {
		return "America/New_York", true
	}
	for _, prefix := range []string{"posix/", "right/"} {
		if rest, cut := strings.CutPrefix(name, prefix); cut && ianaZone(rest) {
			return rest, true
		}
	}
	return "", false
}

// Factory is in the database, but names no place: a host whose zone was
// not set. New definitions name a real zone.
const factoryZone = "Factory"

var zones sync.Map // name -> *zone; only names that loaded

// utcZone is UTC, whose offset is always 0.
var utcZone = &zone{loc: time.UTC}

// loadZone resolves a definition's zone from the embedded database; "" is
// UTC. It takes what any definition stored so far may name, the host-only
// names included (hostOnlyZone); checkNewZone says which names a new
// definition may take. Loaded zones are cached.
func loadZone(name string) (*zone, error) {
	if name == "" || name == "UTC" {
		return utcZone, nil
	}
	if z, ok := zones.Load(name); ok {
		return z.(*zone), nil
	}
	if name == "Local" {
		return nil, invalid("time zone %q depends on the server's host: name an IANA zone like Europe/Berlin", name)
	}
	file := name
	if same, ok := hostOnlyZone(name); ok {
		file = same
	}
	f := zoneFiles()[file]
	if f == nil {
		return nil, invalid("unknown time zone %q: want an IANA name like UTC, Europe/Berlin or America/New_York", name)
	}
	loc, err := readZone(name, f)
	if err != nil {
		return nil, invalid("time zone %q: the embedded zone file is unreadable: %v", name, err)
	}
	z, _ := zones.LoadOrStore(name, newZone(loc))
	return z.(*zone), nil
}

// readZone parses a zone file of the database as the zone name.
func readZone(name string, f *zip.File) (*time.Location, error) {
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, err
	}
	return time.LoadLocationFromTZData(name, data)
}

// zone is a time zone of the embedded database with its UTC offsets
// tabulated from tableFrom to tableTo. Go answers an offset by a binary
// search over a zone file's transitions, but past the last one it reads
// the zone's rule string anew for every instant, and the files of Go's copy
// of the database list transitions only up to 2007 ("slim" files): that
// doubled what ten years of hourly windows cost (BenchmarkZoneHours). The
// table takes a binary search of its own.
type zone struct {
	loc *time.Location
	// offsets[i] holds from starts[i] (Unix seconds) until starts[i+1],
	// the last one until tableTo.
	starts  []int64
	offsets []int32
}

// The span of the tables: the years data has. Outside, Go answers.
var (
	tableFrom = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	tableTo   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

// newZone tabulates loc's offsets, as Go tells them, over the table's span.
func newZone(loc *time.Location) *zone {
	z := &zone{loc: loc}
	for t := tableFrom; t < tableTo; {
		offset, end := goOffset(loc, t)
		if n := len(z.offsets); n == 0 || z.offsets[n-1] != int32(offset) {
			z.starts = append(z.starts, t)
			z.offsets = append(z.offsets, int32(offset))
		}
		t = end
	}
	return z
}

// offsetAt is z's UTC offset at instant t (Unix seconds), in seconds, and
// an instant after t until which it holds at least (math.MaxInt64: for
// good).
func (z *zone) offsetAt(t int64) (offset int, end int64) {
	if t < tableFrom || t >= tableTo || len(z.starts) == 0 {
		return goOffset(z.loc, t)
	}
	i := sort.Search(len(z.starts), func(i int) bool { return z.starts[i] > t }) - 1
	end = tableTo
	if i+1 < len(z.starts) {
		end = z.starts[i+1]
	}
	return int(z.offsets[i]), end
}

// goOffset is loc's offset at instant t as Go tells it, and the end of the
// zone period holding t.
func goOffset(loc *time.Location, t int64) (offset int, end int64) {
	at := time.Unix(t, 0).In(loc)
	_, offset = at.Zone()
	_, e := at.ZoneBounds()
	switch {
	case e.IsZero():
		return offset, math.MaxInt64
	case e.Unix() <= t:
		// Past a zone file's listed transitions Go gives the end of a
		// year's last zone period as 365 days after the year's start
		// (time.tzset), short of a leap year's end: the offset holds until
		// the next year begins.
		return offset, time.Date(at.UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	}
	return offset, e.Unix()
}

// checkNewZone refuses, in a new definition, a zone name that loads only
// for the sake of definitions stored before (hostOnlyZone, Factory),
// saying what to name instead.
func checkNewZone(name string) error {
	same, hostOnly := hostOnlyZone(name)
	switch {
	case name == factoryZone || same == factoryZone:
		return invalid("time zone %q names no place (a host whose zone is not set): name an IANA zone like UTC or Europe/Berlin", name)
	case hostOnly:
		return invalid("time zone %q is a name of some hosts' zoneinfo, not of the IANA time zone database "+
			"every chunklock server carries: name %q, the same zone", name, same)
	}
	return nil
}
