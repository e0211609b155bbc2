package partition

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tzif is a zone file (TZif version 1) of one zone type: a fixed offset.
func tzif(offset int32, abbr string) []byte {
	var b bytes.Buffer
	b.WriteString("TZif")
	b.Write(make([]byte, 16))                                          // version 1 and reserved
	for _, n := range []uint32{0, 0, 0, 0, 1, uint32(len(abbr) + 1)} { // isut, isstd, leap, time, type, char
		_ = binary.Write(&b, binary.BigEndian, n)
	}
	_ = binary.Write(&b, binary.BigEndian, offset)
	b.Write([]byte{0, 0}) // not DST; abbreviation at 0
	b.WriteString(abbr + "\x00")
	return b.Bytes()
}

// zoneChildEnv marks the process TestZonesIgnoreTheHost runs as a host
// with its own zoneinfo.
const zoneChildEnv = "CHUNKLOCK_TEST_ZONE_HOST"

// TestZonesIgnoreTheHost: every replica resolves a zone from the same
// database, the binary's own copy, whatever its host has. Here the host's
// zoneinfo (ZONEINFO, which time.LoadLocation reads first) says that
// Europe/Berlin is UTC and knows a zone Mars/Base: windows in Berlin
// still begin at local midnight, and Mars/Base is unknown, as on a host
// with no zoneinfo at all.
func TestZonesIgnoreTheHost(t *testing.T) {
	if os.Getenv(zoneChildEnv) != "" {
		zonesOnThisHost(t)
		return
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"Europe/Berlin": tzif(0, "UTC"), "Mars/Base": tzif(3600, "MBT")} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
	loc, err := time.LoadLocationFromTZData("Mars/Base", tzif(3600, "MBT"))
	require.NoError(t, err, "the zone file the host has is valid")
	_, offset := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Zone()
	require.Equal(t, 3600, offset)

	cmd := exec.Command(os.Args[0], "-test.run=^TestZonesIgnoreTheHost$", "-test.v")
	cmd.Env = append(os.Environ(), zoneChildEnv+"=1", "ZONEINFO="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestZonesIgnoreTheHost")
}

func zonesOnThisHost(t *testing.T) {
	host, err := time.LoadLocation("Mars/Base")
	require.NoError(t, err, "this process's host knows Mars/Base")
	require.Equal(t, "Mars/Base", host.String())

	def := Def{Kind: Daily, Start: "2026-01-01", Timezone: "Europe/Berlin"}
	start, _, err := def.Window("2026-01-01")
	require.NoError(t, err)
	require.Equal(t, time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC), start.UTC(), "Berlin is UTC+1 in January")
	mars := Def{Kind: Daily, Start: "2026-01-01", Timezone: "Mars/Base"}
	require.ErrorIs(t, mars.Validate(), ErrInvalid)
	require.ErrorContains(t, mars.Validate(), `unknown time zone "Mars/Base"`)
	require.False(t, mars.Contains("2026-01-01"))
}

// TestZoneNames: a new definition takes the names of the embedded IANA
// database, links such as UTC and US/Eastern included, and nothing else:
// names that only some hosts' zoneinfo has are refused, saying what to
// name instead.
func TestZoneNames(t *testing.T) {
	for _, name := range []string{"", "UTC", "Etc/UTC", "GMT", "Zulu", "UCT", "US/Eastern", "Asia/Calcutta",
		"Europe/Kyiv", "EST5EDT", "Etc/GMT+5", "Europe/Berlin", "America/Argentina/Buenos_Aires"} {
		def := Def{Kind: Daily, Start: "2026-01-01", Timezone: name}
		require.NoError(t, def.ValidateNew(), name)
		require.NoError(t, def.Validate(), name)
	}
	for name, says := range map[string]string{
		"posix/Europe/Berlin":     `name "Europe/Berlin"`,
		"right/UTC":               `name "UTC"`,
		"right/Europe/Berlin":     `name "Europe/Berlin"`,
		"posixrules":              `name "America/New_York"`,
		"Factory":                 "like UTC or Europe/Berlin",
		"posix/Factory":           "like UTC or Europe/Berlin",
		"Local":                   "depends on the server's host",
		"localtime":               "unknown time zone",
		"Mars/Base":               "unknown time zone",
		"europe/berlin":           "unknown time zone",
		"Europe":                  "unknown time zone",
		"Europe/":                 "unknown time zone",
		"zone.tab":                "unknown time zone",
		"leapseconds":             "unknown time zone",
		"../zoneinfo/UTC":         "unknown time zone",
		"/usr/share/zoneinfo/UTC": "unknown time zone",
		"posix/Mars/Base":         "unknown time zone",
		"right/posixrules":        "unknown time zone",
	} {
		def := Def{Kind: Daily, Start: "2026-01-01", Timezone: name}
		err := def.ValidateNew()
		require.ErrorIs(t, err, ErrInvalid, name)
		require.ErrorContains(t, err, says, name)
		require.ErrorContains(t, err, `"`+name+`"`, "the message names the zone given")
	}
}

// TestStoredHostOnlyZones: a definition stored before host-only names
// were refused keeps loading: its zone resolves to the same zone of the
// embedded database (posix/X and right/X to X, whose clocks tell the same
// civil time; posixrules to America/New_York, the rules it links to on
// hosts that have it; Factory as the embedded copy has it), on every
// replica alike. Its windows are given in the zone as named.
func TestStoredHostOnlyZones(t *testing.T) {
	for stored, same := range map[string]string{
		"posix/Europe/Berlin": "Europe/Berlin", "right/Europe/Berlin": "Europe/Berlin", "right/UTC": "UTC",
		"posixrules": "America/New_York", "Factory": "Etc/UTC",
	} {
		def := Def{Kind: Hourly, Start: "2026-01-01T00", Timezone: stored}
		require.NoError(t, def.Validate(), stored)
		want := Def{Kind: Hourly, Start: "2026-01-01T00", Timezone: same}
		for _, id := range []string{"2026-01-01T00", "2026-03-29T03", "2026-10-25T02", "2026-11-01T01"} {
			s, e, err := def.Window(id)
			require.NoError(t, err, "%s %s", stored, id)
			ws, we, err := want.Window(id)
			require.NoError(t, err)
			require.True(t, s.Equal(ws) && e.Equal(we), "%s %s: %s-%s, not %s-%s", stored, id, s, e, ws, we)
			require.Equal(t, stored, s.Location().String())
		}
		require.True(t, def.Contains("2026-06-01T12"), stored)
	}
}

// TestZoneTableAgreesWithGo: the table of a zone's offsets answers as Go
// does, for zones across the database and instants from year 1 to 9999
// (inside and outside the table's span), and the offset holds from an
// instant to the end offsetAt gives.
func TestZoneTableAgreesWithGo(t *testing.T) {
	names := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia", "Asia/Kathmandu",
		"America/Santiago", "Africa/Casablanca", "Europe/Dublin", "Antarctica/Troll", "Etc/GMT-14"}
	i := 0
	for name := range zoneFiles() {
		if i++; i%25 == 0 {
			names = append(names, name)
		}
	}
	r := rand.New(rand.NewPCG(8, 8))
	lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Unix()
	for _, name := range names {
		z, err := loadZone(name)
		require.NoError(t, err, name)
		for k := range 400 {
			x := lo + r.Int64N(hi-lo)
			if k%2 == 0 { // most in the table's span
				x = tableFrom + r.Int64N(tableTo-tableFrom)
			}
			offset, end := z.offsetAt(x)
			_, want := time.Unix(x, 0).In(z.loc).Zone()
			require.Equal(t, want, offset, "%s at %s", name, time.Unix(x, 0).UTC())
			require.Greater(t, end, x)
			if end < math.MaxInt64 {
				_, atEnd := time.Unix(end-1, 0).In(z.loc).Zone()
				require.Equal(t, want, atEnd, "%s: the offset at %s holds until %s", name, time.Unix(x, 0).UTC(), time.Unix(end, 0).UTC())
			}
		}
	}
}
