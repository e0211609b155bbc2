package partition

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// utc parses an RFC 3339 instant for the tables.
func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

// early is an early start of each time kind, for definitions that only
// need to be valid.
var early = map[Kind]string{Hourly: "2000-01-01T00", Daily: "2000-01-01", Weekly: "2000-W01", Monthly: "2000-01"}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		kind       Kind
		tz, id     string
		start, end string // RFC 3339
		hours      float64
	}{
		// Plain windows in UTC.
		{Hourly, "", "2026-11-22T05", "2026-11-22T05:00:00Z", "2026-11-22T06:00:00Z", 1},
		{Hourly, "", "2026-12-31T23", "2026-12-31T23:00:00Z", "2027-01-01T00:00:00Z", 1},
		{Daily, "", "2026-11-22", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", 24},
		{Weekly, "", "2026-W47", "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z", 168},
		{Monthly, "", "2026-11", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", 720},
		// Month ends and leap years.
		{Monthly, "", "2026-02", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", 28 * 24},
		{Monthly, "", "2024-02", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z", 29 * 24},
		{Monthly, "", "2100-02", "2100-02-01T00:00:00Z", "2100-03-01T00:00:00Z", 28 * 24},
		{Monthly, "", "2000-02", "2000-02-01T00:00:00Z", "2000-03-01T00:00:00Z", 29 * 24},
		{Monthly, "", "2026-12", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", 31 * 24},
		{Daily, "", "2024-02-29", "2024-02-29T00:00:00Z", "2024-03-01T00:00:00Z", 24},
		{Daily, "", "2026-04-30", "2026-04-30T00:00:00Z", "2026-05-01T00:00:00Z", 24},
		// ISO weeks across year ends.
		{Weekly, "", "2026-W53", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z", 168},
		{Weekly, "", "2027-W01", "2027-01-04T00:00:00Z", "2027-01-11T00:00:00Z", 168},
		{Weekly, "", "2026-W01", "2025-12-29T00:00:00Z", "2026-01-05T00:00:00Z", 168},
		{Weekly, "", "2020-W53", "2020-12-28T00:00:00Z", "2021-01-04T00:00:00Z", 168},
		{Weekly, "", "2021-W01", "2021-01-04T00:00:00Z", "2021-01-11T00:00:00Z", 168},
		{Weekly, "", "2015-W53", "2015-12-28T00:00:00Z", "2016-01-04T00:00:00Z", 168},
		// Berlin: CET (+01) / CEST (+02); spring forward 2026-03-29 02:00 -> 03:00,
		// fall back 2026-10-25 03:00 -> 02:00.
		{Daily, "Europe/Berlin", "2026-03-28", "2026-03-27T23:00:00Z", "2026-03-28T23:00:00Z", 24},
		{Daily, "Europe/Berlin", "2026-03-29", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", 23},
		{Daily, "Europe/Berlin", "2026-10-25", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", 25},
		{Hourly, "Europe/Berlin", "2026-03-29T01", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", 1},
		{Hourly, "Europe/Berlin", "2026-03-29T03", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", 1},
		{Hourly, "Europe/Berlin", "2026-10-25T01", "2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", 1},
		{Hourly, "Europe/Berlin", "2026-10-25T02", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", 2},
		{Hourly, "Europe/Berlin", "2026-10-25T03", "2026-10-25T02:00:00Z", "2026-10-25T03:00:00Z", 1},
		{Weekly, "Europe/Berlin", "2026-W13", "2026-03-22T23:00:00Z", "2026-03-29T22:00:00Z", 167},
		{Monthly, "Europe/Berlin", "2026-10", "2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z", 31*24 + 1},
		// New York: EST (-05) / EDT (-04); spring forward 2026-03-08 02:00 -> 03:00,
		// fall back 2026-11-01 02:00 -> 01:00.
		{Daily, "America/New_York", "2026-03-08", "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z", 23},
		{Daily, "America/New_York", "2026-11-01", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z", 25},
		{Hourly, "America/New_York", "2026-03-08T01", "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", 1},
		{Hourly, "America/New_York", "2026-03-08T03", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z", 1},
		{Hourly, "America/New_York", "2026-11-01T00", "2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", 1},
		{Hourly, "America/New_York", "2026-11-01T01", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", 2},
		{Hourly, "America/New_York", "2026-11-01T02", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z", 1},
		// Zones without DST, and one with a 45-minute offset.
		{Daily, "Asia/Tokyo", "2026-11-22", "2026-11-21T15:00:00Z", "2026-11-22T15:00:00Z", 24},
		{Hourly, "Asia/Kathmandu", "2026-11-22T00", "2026-11-21T18:15:00Z", "2026-11-21T19:15:00Z", 1},
		// Pacific/Apia skipped 2011-12-30: the 29th ends where the 31st begins.
		{Daily, "Pacific/Apia", "2011-12-29", "2011-12-29T10:00:00Z", "2011-12-30T10:00:00Z", 24},
		{Daily, "Pacific/Apia", "2011-12-31", "2011-12-30T10:00:00Z", "2011-12-31T10:00:00Z", 24},
	} {
		def := Def{Kind: tc.kind, Start: early[tc.kind], Timezone: tc.tz}
		start, end, err := def.Window(tc.id)
		require.NoError(t, err, "%s %s %s", tc.kind, tc.tz, tc.id)
		require.True(t, utc(t, tc.start).Equal(start), "%s %s start: got %s", tc.tz, tc.id, start.UTC())
		require.True(t, utc(t, tc.end).Equal(end), "%s %s end: got %s", tc.tz, tc.id, end.UTC())
		require.Equal(t, tc.hours, end.Sub(start).Hours(), "%s %s", tc.tz, tc.id)
		if tc.tz != "" {
			require.Equal(t, tc.tz, start.Location().String(), "windows are given in the definition's zone")
		}
	}
}

func TestWindowSkippedDataIDs(t *testing.T) {
	for _, tc := range []struct {
		kind   Kind
		tz, id string
	}{
		{Hourly, "Europe/Berlin", "2026-03-29T02"},
		{Hourly, "America/New_York", "2026-03-08T02"},
		{Daily, "Pacific/Apia", "2011-12-30"},
		{Hourly, "Pacific/Apia", "2011-12-30T12"},
	} {
		def := Def{Kind: tc.kind, Start: example[tc.kind], Timezone: tc.tz}
		_, _, err := def.Window(tc.id)
		require.ErrorIs(t, err, ErrInvalid, "%s %s", tc.tz, tc.id)
		require.ErrorContains(t, err, "skip")
		require.False(t, Def{Kind: tc.kind, Start: early[tc.kind], Timezone: tc.tz}.Contains(tc.id))
	}
}

// TestWindowsTile walks every hour, day, week and month of two years in
// several zones: each window begins where the previous one ended, a day
// holds exactly the hours whose windows fall in it, and a day is 23, 24 or
// 25 hours long.
func TestWindowsTile(t *testing.T) {
	for _, tz := range []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"} {
		for _, kind := range []Kind{Hourly, Daily, Weekly, Monthly} {
			start := map[Kind]string{Hourly: "2025-12-28T00", Daily: "2025-12-28", Weekly: "2025-W52", Monthly: "2025-12"}[kind]
			def := Def{Kind: kind, Start: start, Timezone: tz}
			seq, err := def.Range("", "")
			require.NoError(t, err)
			var prevEnd time.Time
			for id := range seq {
				s, e, err := def.Window(id)
				require.NoError(t, err, id)
				require.True(t, e.After(s), "%s %s", tz, id)
				if !prevEnd.IsZero() {
					require.True(t, prevEnd.Equal(s), "%s %s starts at %s, previous ended %s", tz, id, s, prevEnd)
				}
				prevEnd = e
				if kind == Daily {
					h := e.Sub(s).Hours()
					require.True(t, h >= 23 && h <= 25, "%s %s is %v hours", tz, id, h)
				}
				if s.Year() >= 2028 {
					break
				}
			}
		}
	}
}

func TestDueAndLate(t *testing.T) {
	day := 24 * time.Hour
	deadline := 2 * time.Hour
	def := Def{Kind: Daily, Start: "2026-01-01", Timezone: "Europe/Berlin", Lag: time.Hour, Deadline: &deadline}
	due, err := def.Due("2026-10-25")
	require.NoError(t, err)
	require.True(t, utc(t, "2026-10-26T00:00:00Z").Equal(due), "end 2026-10-25T23:00Z + 1h, got %s", due.UTC())

	lateAt := utc(t, "2026-10-26T01:00:00Z")
	for _, tc := range []struct {
		now   time.Time
		ready bool
		late  bool
	}{
		{lateAt.Add(-time.Second), false, false},
		{lateAt, false, true},
		{lateAt.Add(day), false, true},
		{lateAt.Add(day), true, false},
	} {
		late, err := def.Late("2026-10-25", tc.now, tc.ready)
		require.NoError(t, err)
		require.Equal(t, tc.late, late, "now %s ready %v", tc.now, tc.ready)
	}
	noDeadline := Def{Kind: Daily, Start: "2026-01-01"}
	late, err := noDeadline.Late("2026-01-01", lateAt.Add(100*day), false)
	require.NoError(t, err)
	require.False(t, late, "without a deadline nothing is late")

	_, err = def.Late("2026-13-01", lateAt, false)
	require.ErrorIs(t, err, ErrInvalid)
	_, err = def.Due("2026-10-25T01")
	require.ErrorIs(t, err, ErrInvalid)

	static := Def{Kind: Static, Values: []string{"eu", "us"}}
	due, err = static.Due("eu")
	require.NoError(t, err)
	require.True(t, due.IsZero(), "STATIC dataids are due at once")
	_, err = static.Due("asia")
	require.ErrorIs(t, err, ErrInvalid)
}

// TestLeapYearEnds: the last days and hours of leap years, far past the
// zone files' listed transitions (where the zone's rule string takes
// over), exist and tile. Go reports the end of a year's last zone period
// as 365 days after the year's start, short of a leap year's end, and
// 2020-12-31 and 2021-01-01 were no dataids in New York.
func TestLeapYearEnds(t *testing.T) {
	for _, tz := range []string{"America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe", "America/Santiago"} {
		for year := 2008; year <= 2404; year += 4 {
			if year%100 == 0 && year%400 != 0 {
				continue
			}
			for _, kind := range []Kind{Hourly, Daily, Weekly, Monthly} {
				def := Def{Kind: kind, Start: early[kind], Timezone: tz}
				from := idOf(kind, time.Date(year, 12, 29, 0, 0, 0, 0, time.UTC))
				to := idOf(kind, time.Date(year+1, 1, 3, 0, 0, 0, 0, time.UTC))
				seq, err := def.Range(from, to)
				require.NoError(t, err)
				var prevEnd time.Time
				n := 0
				for id := range seq {
					s, e, err := def.Window(id)
					require.NoError(t, err, "%s %s", tz, id)
					require.True(t, prevEnd.IsZero() || prevEnd.Equal(s), "%s %s starts at %s, the one before ended %s", tz, id, s, prevEnd)
					prevEnd = e
					n++
				}
				want := map[Kind]int{Hourly: 5*24 + 1, Daily: 6, Weekly: 1, Monthly: 2}[kind]
				require.GreaterOrEqual(t, n, want, "%s %s %s to %s", tz, kind, from, to)
			}
		}
	}
}
