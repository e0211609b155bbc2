package partition

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// civilOf is the first instant (UTC) of the period of kind holding t.
func civilOf(kind Kind, t time.Time) time.Time {
	switch kind {
	case Hourly:
		return t.Truncate(time.Hour)
	case Daily:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case Weekly:
		return time.Date(t.Year(), t.Month(), t.Day()-(int(t.Weekday())+6)%7, 0, 0, 0, 0, time.UTC)
	default:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
}

// civilStep moves the period starting at t k periods of kind, by Go's own
// calendar: the reference for Back.
func civilStep(kind Kind, t time.Time, k int) time.Time {
	switch kind {
	case Hourly:
		return t.AddDate(0, 0, k/24).Add(time.Duration(k%24) * time.Hour)
	case Daily:
		return t.AddDate(0, 0, k)
	case Weekly:
		return t.AddDate(0, 0, 7*k)
	default:
		return time.Date(t.Year(), t.Month()+time.Month(k), 1, 0, 0, 0, 0, time.UTC)
	}
}

// idOf is the dataid of the period of kind starting at t (UTC).
func idOf(kind Kind, t time.Time) string {
	n := periodOfWall(kind, t.Unix())
	id, _ := formatPeriod(kind, n)
	return id
}

// TestBackByCalendar: Back steps back by the kind's calendar, for every
// time kind from year 1 to 9999 and any count: the dataid k hours, days,
// ISO weeks or months earlier, or the definition's start when that is
// later. It never multiplies a window's length, so no count overflows.
func TestBackByCalendar(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 23))
	lo := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(9999, 12, 25, 0, 0, 0, 0, time.UTC).Unix()
	for _, kind := range []Kind{Hourly, Daily, Weekly, Monthly} {
		def := Def{Kind: kind, Start: idOf(kind, time.Unix(lo, 0).UTC())}
		first := civilOf(kind, time.Unix(lo, 0).UTC())
		for i := range 2000 {
			at := civilOf(kind, time.Unix(lo+r.Int64N(hi-lo), 0).UTC())
			k := []int{0, 1, r.IntN(100), r.IntN(200_000), r.IntN(5_000_000), math.MaxInt}[i%6]
			want := def.Start // k = MaxInt: more than 9999 years of hours
			if k < math.MaxInt {
				if b := civilStep(kind, at, -k); b.After(first) {
					want = idOf(kind, b)
				}
			}
			got, ok := def.Back(idOf(kind, at), k)
			require.True(t, ok, "%s %s back %d", kind, idOf(kind, at), k)
			require.Equal(t, want, got, "%s %s back %d", kind, idOf(kind, at), k)
		}
	}
}

// TestBackInZones: where clocks skip periods, [Back(id, k), id] holds at
// most k+1 expected dataids, and Back(id, 0) is id.
func TestBackInZones(t *testing.T) {
	for _, tc := range []struct {
		kind     Kind
		tz, from string
		id       string
		k        int
		want     string
	}{
		{Hourly, "Europe/Berlin", "2026-01-01T00", "2026-03-29T04", 2, "2026-03-29T03"}, // 02 is skipped
		{Hourly, "Europe/Berlin", "2026-01-01T00", "2026-03-29T04", 3, "2026-03-29T01"},
		{Daily, "Pacific/Apia", "2011-01-01", "2011-12-31", 1, "2011-12-31"}, // the 30th is skipped
		{Daily, "Pacific/Apia", "2011-01-01", "2011-12-31", 2, "2011-12-29"},
		{Monthly, "Asia/Tokyo", "2020-01", "2026-11", 82, "2020-01"},
		{Monthly, "Asia/Tokyo", "2020-01", "2026-11", 81, "2020-02"},
		{Weekly, "America/New_York", "1700-W01", "2026-W44", math.MaxInt, "1700-W01"},
	} {
		def := Def{Kind: tc.kind, Start: tc.from, Timezone: tc.tz}
		got, ok := def.Back(tc.id, tc.k)
		require.True(t, ok, "%+v", tc)
		require.Equal(t, tc.want, got, "%+v", tc)
		same, ok := def.Back(tc.id, 0)
		require.True(t, ok)
		require.Equal(t, tc.id, same)
	}
	berlin := Def{Kind: Hourly, Start: "2026-01-01T00", Timezone: "Europe/Berlin"}
	for _, bad := range []struct {
		id string
		k  int
	}{{"2025-12-31T23", 0}, {"2026-03-29T02", 0}, {"2026-03", 1}, {"2026-03-29T04", -1}} {
		_, ok := berlin.Back(bad.id, bad.k)
		require.False(t, ok, "%+v: before the start, skipped, of another kind, or a negative count", bad)
	}
}

// TestBackOtherKinds: INTEGER steps back by k, saturating at its start;
// STATIC has no calendar.
func TestBackOtherKinds(t *testing.T) {
	ints := Def{Kind: Integer, Start: "5"}
	for _, tc := range []struct {
		id   string
		k    int
		want string
		ok   bool
	}{
		{"100", 10, "90", true}, {"100", 95, "5", true}, {"100", 96, "5", true},
		{"18446744073709551615", math.MaxInt, "9223372036854775808", true},
		{"4", 0, "", false}, {"x", 1, "", false}, {"100", -1, "", false},
	} {
		got, ok := ints.Back(tc.id, tc.k)
		require.Equal(t, tc.ok, ok, "%+v", tc)
		require.Equal(t, tc.want, got, "%+v", tc)
	}
	_, ok := Def{Kind: Static, Values: []string{"a", "b"}}.Back("b", 1)
	require.False(t, ok)
}

// FuzzBack: for any kind, zone, dataid from year 1 to 9999 and count, Back
// answers an expected dataid at or before id; in UTC it is the one k
// periods earlier by Go's calendar (or the start), and in any zone
// [Back(id, k), id] holds at most k+1 dataids. Run longer with
// `go test ./backends/partition -run '^$' -fuzz FuzzBack`.
func FuzzBack(f *testing.F) {
	f.Add(uint8(3), uint8(0), int64(2026*12+9), 82)
	f.Add(uint8(2), uint8(1), int64(0), math.MaxInt)
	f.Add(uint8(0), uint8(2), int64(-1_000_000), 100_000)
	f.Fuzz(func(t *testing.T, kindIndex, zoneIndex uint8, at int64, k int) {
		kind := Kinds[int(kindIndex)%4]
		limits := periodLimits[kind]
		n := limits[0] + int64(uint64(at)%uint64(limits[1]-limits[0]+1))
		def := Def{Kind: kind, Start: idOf(kind, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)),
			Timezone: fuzzZones[int(zoneIndex)%len(fuzzZones)]}
		id, _ := formatPeriod(kind, n)
		back, ok := def.Back(id, k)
		if k < 0 || !def.Contains(id) {
			if k < 0 && ok {
				t.Fatalf("Back(%q, %d) = %q for a negative count", id, k, back)
			}
			return
		}
		if !ok || !def.Contains(back) || CompareDataID(back, id) > 0 {
			t.Fatalf("%s: Back(%q, %d) = %q, %v", def.Timezone, id, k, back, ok)
		}
		if def.Timezone == "" && k < 200_000 {
			start, _ := parsePeriod(kind, id)
			at := time.Unix(wallStart(kind, start), 0).UTC()
			want := def.Start
			if b := civilStep(kind, at, -k); b.After(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)) {
				want = idOf(kind, b)
			}
			if back != want {
				t.Fatalf("Back(%q, %d) = %q, want %q", id, k, back, want)
			}
		}
		if k <= 2000 {
			seq, err := def.Range(back, id)
			if err != nil {
				t.Fatal(err)
			}
			count := 0
			for range seq {
				count++
			}
			if count > k+1 {
				t.Fatalf("%s: [Back(%q, %d), %q] holds %d dataids", def.Timezone, id, k, id, count)
			}
		}
	})
}
