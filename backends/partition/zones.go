package partition

import (
	"archive/zip"
	"bytes"
	_ "embed" // the zone database
	"io"
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

var locations sync.Map // name -> *time.Location; only names that loaded

// loadLocation resolves a definition's zone from the embedded database;
// "" is UTC. It takes what any definition stored so far may name, the
// host-only names included (hostOnlyZone); checkNewZone says which names a
// new definition may take. Loaded zones are cached.
func loadLocation(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location), nil
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
	locations.Store(name, loc)
	return loc, nil
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
