package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func dur(d time.Duration) *time.Duration { return &d }

func TestValidate(t *testing.T) {
	for _, ok := range []Def{
		{Kind: Hourly, Start: "2026-11-22T05"},
		{Kind: Hourly, Start: "2026-03-29T01", End: "2026-03-29T03", Timezone: "Europe/Berlin"},
		{Kind: Daily, Start: "2024-02-29", End: "2024-02-29", Lag: time.Hour, Deadline: dur(time.Hour)},
		{Kind: Weekly, Start: "2026-W53", Timezone: "America/New_York"},
		{Kind: Monthly, Start: "0001-01", End: "9999-12"},
		{Kind: Integer},
		{Kind: Integer, Start: "0", End: "18446744073709551615"},
		{Kind: Static, Values: []string{"eu", "us", "a.b_c:d=e+f-g"}},
	} {
		require.NoError(t, ok.Validate(), "%+v", ok)
	}
	for _, tc := range []struct {
		def  Def
		want string
	}{
		{Def{}, "partition kind is required: one of HOURLY DAILY WEEKLY MONTHLY INTEGER STATIC"},
		{Def{Kind: "YEARLY", Start: "2026"}, `unknown partition kind "YEARLY"`},
		{Def{Kind: Daily}, "start is required for DAILY partitions: the first dataid, like 2026-11-22"},
		{Def{Kind: Daily, Start: "2026-11-22T05"}, `start "2026-11-22T05" is not a DAILY dataid: it has 13 characters, not 10; want YYYY-MM-DD`},
		{Def{Kind: Daily, Start: "2026-02-29"}, "2026-02 has days 01-28"},
		{Def{Kind: Daily, Start: "2100-02-29"}, "2100-02 has days 01-28"},
		{Def{Kind: Daily, Start: "2026-13-01"}, "the month is not 01-12"},
		{Def{Kind: Daily, Start: "2026/11/22"}, "a '-' must follow the year"},
		{Def{Kind: Daily, Start: "0000-11-22"}, "the year is not 0001-9999"},
		{Def{Kind: Hourly, Start: "2026-11-22 05"}, "a 'T' must follow the day"},
		{Def{Kind: Hourly, Start: "2026-11-22T24"}, "the hour is not 00-23"},
		{Def{Kind: Weekly, Start: "2027-W53"}, "ISO year 2027 has weeks 01-52"},
		{Def{Kind: Weekly, Start: "2026-W00"}, "ISO year 2026 has weeks 01-53"},
		{Def{Kind: Weekly, Start: "2026-11"}, "is not a WEEKLY dataid"},
		{Def{Kind: Monthly, Start: "2026-1"}, "it has 6 characters, not 7"},
		{Def{Kind: Daily, Start: "2026-11-22", End: "2026-11-21"}, `end "2026-11-21" is before start "2026-11-22"`},
		{Def{Kind: Daily, Start: "2026-11-22", End: "tomorrow"}, `end "tomorrow" is not a DAILY dataid`},
		{Def{Kind: Hourly, Start: "2026-03-29T02", Timezone: "Europe/Berlin"}, `start "2026-03-29T02" does not exist in Europe/Berlin: the clocks skip it`},
		{Def{Kind: Daily, Start: "2026-11-22", Timezone: "Europe/Berln"}, `unknown time zone "Europe/Berln": want an IANA name`},
		{Def{Kind: Daily, Start: "2026-11-22", Timezone: "Local"}, `time zone "Local" depends on the server's host`},
		{Def{Kind: Daily, Start: "2026-11-22", Timezone: "../etc/passwd"}, "unknown time zone"},
		{Def{Kind: Daily, Start: "2026-11-22", Lag: -time.Second}, "lag must not be negative"},
		{Def{Kind: Daily, Start: "2026-11-22", Deadline: dur(-time.Second)}, "deadline must not be negative"},
		{Def{Kind: Daily, Start: "2026-11-22", Lag: time.Hour, Deadline: dur(time.Minute)}, "deadline (1m0s) is shorter than lag (1h0m0s)"},
		{Def{Kind: Daily, Start: "2026-11-22", Values: []string{"a"}}, "values are for STATIC partitions only"},
		{Def{Kind: Integer, Start: "-1"}, `start "-1" is not an INTEGER dataid: want a plain non-negative integer`},
		{Def{Kind: Integer, Start: "007"}, `start "007" is not an INTEGER dataid`},
		{Def{Kind: Integer, Start: "+7"}, `start "+7" is not an INTEGER dataid`},
		{Def{Kind: Integer, Start: "1e3"}, `start "1e3" is not an INTEGER dataid`},
		{Def{Kind: Integer, End: "18446744073709551616"}, "it is larger than 18446744073709551615"},
		{Def{Kind: Integer, Start: "10", End: "9"}, `end "9" is before start "10"`},
		{Def{Kind: Integer, Timezone: "UTC"}, "timezone applies to time kinds"},
		{Def{Kind: Integer, Lag: time.Second}, "lag and deadline apply to time kinds only"},
		{Def{Kind: Static, Deadline: dur(0), Values: []string{"a"}}, "lag and deadline apply to time kinds only"},
		{Def{Kind: Integer, Values: []string{"1"}}, "values are for STATIC partitions only, not INTEGER"},
		{Def{Kind: Static}, "STATIC partitions need at least one value"},
		{Def{Kind: Static, Values: []string{"a", "b", "a"}}, `value "a" appears twice`},
		{Def{Kind: Static, Values: []string{"a b"}}, `value "a b" is not a valid dataid`},
		{Def{Kind: Static, Values: []string{""}}, `value "" is not a valid dataid`},
		{Def{Kind: Static, Start: "a", Values: []string{"a"}}, "STATIC partitions take values, not start or end"},
		{Def{Kind: Static, Values: make([]string, MaxStaticValues+1)}, "at most 10000 values"},
	} {
		err := tc.def.Validate()
		require.ErrorIs(t, err, ErrInvalid, "%+v", tc.def)
		require.ErrorContains(t, err, tc.want, "%+v", tc.def)
	}
}

func TestContainsNextPrev(t *testing.T) {
	berlin := Def{Kind: Hourly, Start: "2026-03-29T00", End: "2026-03-29T04", Timezone: "Europe/Berlin"}
	for _, tc := range []struct {
		def        Def
		id         string
		contains   bool
		next, prev string // "" = none
	}{
		{berlin, "2026-03-29T00", true, "2026-03-29T01", ""},
		{berlin, "2026-03-29T01", true, "2026-03-29T03", "2026-03-29T00"},
		{berlin, "2026-03-29T02", false, "2026-03-29T03", "2026-03-29T01"},
		{berlin, "2026-03-29T04", true, "", "2026-03-29T03"},
		{berlin, "2026-03-28T23", false, "2026-03-29T00", ""},
		{berlin, "2026-03-29T05", false, "", "2026-03-29T04"},
		{berlin, "2020-01-01T00", false, "2026-03-29T00", ""},
		{berlin, "2030-01-01T00", false, "", "2026-03-29T04"},
		{berlin, "garbage", false, "", ""},
		{Def{Kind: Daily, Start: "2024-02-28"}, "2024-02-28", true, "2024-02-29", ""},
		{Def{Kind: Daily, Start: "2024-02-28"}, "2024-02-29", true, "2024-03-01", "2024-02-28"},
		{Def{Kind: Daily, Start: "2024-02-28"}, "2099-12-31", true, "2100-01-01", "2099-12-30"},
		{Def{Kind: Daily, Start: "2024-02-28"}, "9999-12-31", true, "", "9999-12-30"},
		{Def{Kind: Daily, Start: "2011-12-28", Timezone: "Pacific/Apia"}, "2011-12-29", true, "2011-12-31", "2011-12-28"},
		{Def{Kind: Weekly, Start: "2026-W52"}, "2026-W53", true, "2027-W01", "2026-W52"},
		{Def{Kind: Weekly, Start: "2026-W52"}, "2027-W53", false, "", ""},
		{Def{Kind: Monthly, Start: "2026-11"}, "2026-12", true, "2027-01", "2026-11"},
		{Def{Kind: Integer}, "0", true, "1", ""},
		{Def{Kind: Integer, Start: "5", End: "10"}, "9", true, "10", "8"},
		{Def{Kind: Integer, Start: "5", End: "10"}, "10", true, "", "9"},
		{Def{Kind: Integer, Start: "5", End: "10"}, "2", false, "5", ""},
		{Def{Kind: Integer, Start: "5", End: "10"}, "99", false, "", "10"},
		{Def{Kind: Integer, Start: "5", End: "10"}, "05", false, "", ""},
		{Def{Kind: Integer}, "18446744073709551615", true, "", "18446744073709551614"},
		{Def{Kind: Static, Values: []string{"us", "eu", "asia"}}, "eu", true, "us", ""},
		{Def{Kind: Static, Values: []string{"us", "eu", "asia"}}, "us", true, "asia", "eu"},
		{Def{Kind: Static, Values: []string{"us", "eu", "asia"}}, "fr", false, "us", "eu"},
		{Def{}, "anything", true, "", ""},
		{Def{}, "not valid", false, "", ""},
	} {
		require.Equal(t, tc.contains, tc.def.Contains(tc.id), "Contains %q in %+v", tc.id, tc.def)
		next, ok := tc.def.Next(tc.id)
		require.Equal(t, tc.next, next, "Next %q in %+v", tc.id, tc.def)
		require.Equal(t, tc.next != "", ok)
		prev, ok := tc.def.Prev(tc.id)
		require.Equal(t, tc.prev, prev, "Prev %q in %+v", tc.id, tc.def)
		require.Equal(t, tc.prev != "", ok)
	}
}

func collect(t *testing.T, d Def, from, to string) []string {
	t.Helper()
	seq, err := d.Range(from, to)
	require.NoError(t, err)
	return slices.Collect(seq)
}

func TestRange(t *testing.T) {
	ny := Def{Kind: Hourly, Start: "2026-11-01T00", End: "2026-11-01T03", Timezone: "America/New_York"}
	require.Equal(t, []string{"2026-11-01T00", "2026-11-01T01", "2026-11-01T02", "2026-11-01T03"}, collect(t, ny, "", ""))
	berlin := Def{Kind: Hourly, Start: "2026-03-29T00", Timezone: "Europe/Berlin"}
	require.Equal(t, []string{"2026-03-29T01", "2026-03-29T03"}, collect(t, berlin, "2026-03-29T01", "2026-03-29T03"))
	require.Equal(t, []string{"2026-03-29T03"}, collect(t, berlin, "2026-03-29T02", "2026-03-29T03"),
		"a range may begin at a skipped hour")
	require.Equal(t, 23, len(collect(t, berlin, "2026-03-29T00", "2026-03-29T23")))
	require.Equal(t, 24, len(collect(t, Def{Kind: Hourly, Start: "2026-10-25T00", Timezone: "Europe/Berlin"},
		"", "2026-10-25T23")), "the repeated hour is one dataid: 24 dataids, 25 hours")

	weeks := collect(t, Def{Kind: Weekly, Start: "2020-W52", End: "2021-W02"}, "", "")
	require.Equal(t, []string{"2020-W52", "2020-W53", "2021-W01", "2021-W02"}, weeks)
	require.Equal(t, 53, len(collect(t, Def{Kind: Weekly, Start: "2026-W01", End: "2026-W53"}, "", "")))
	require.Equal(t, 366, len(collect(t, Def{Kind: Daily, Start: "2024-01-01", End: "2024-12-31"}, "", "")))
	require.Equal(t, 365, len(collect(t, Def{Kind: Daily, Start: "2100-01-01", End: "2100-12-31"}, "", "")))
	require.Equal(t, []string{"2026-11", "2026-12", "2027-01"}, collect(t, Def{Kind: Monthly, Start: "2026-11"}, "", "2027-01"))
	require.Empty(t, collect(t, Def{Kind: Monthly, Start: "2026-11"}, "2027-01", "2026-12"))

	require.Equal(t, []string{"8", "9", "10", "11"}, collect(t, Def{Kind: Integer, Start: "8", End: "11"}, "", ""))
	require.Equal(t, []string{"9", "10"}, collect(t, Def{Kind: Integer}, "9", "10"))
	require.Equal(t, []string{"18446744073709551614", "18446744073709551615"},
		collect(t, Def{Kind: Integer}, "18446744073709551614", ""), "the largest integer ends the sequence")
	require.Equal(t, []string{"b", "c", "aa"}, collect(t, Def{Kind: Static, Values: []string{"aa", "c", "b", "a"}}, "b", ""))

	// An unbounded range is lazy: take three and stop.
	seq, err := Def{Kind: Hourly, Start: "2026-01-01T00"}.Range("", "")
	require.NoError(t, err)
	var got []string
	for id := range seq {
		if got = append(got, id); len(got) == 3 {
			break
		}
	}
	require.Equal(t, []string{"2026-01-01T00", "2026-01-01T01", "2026-01-01T02"}, got)

	for _, bad := range [][2]string{{"2026-11-22", ""}, {"", "x"}} {
		_, err := Def{Kind: Monthly, Start: "2026-11"}.Range(bad[0], bad[1])
		require.ErrorIs(t, err, ErrInvalid)
	}
	_, err = Def{Kind: Integer}.Range("-1", "")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = Def{}.Range("", "")
	require.ErrorIs(t, err, ErrInvalid)
}

func TestDueBefore(t *testing.T) {
	for _, tc := range []struct {
		def  Def
		now  string
		want string // "" = none due
	}{
		{Def{Kind: Daily, Start: "2026-11-01"}, "2026-11-22T00:00:00Z", "2026-11-21"},
		{Def{Kind: Daily, Start: "2026-11-01"}, "2026-11-21T23:59:59Z", "2026-11-20"},
		{Def{Kind: Daily, Start: "2026-11-01"}, "2026-11-01T12:00:00Z", ""},
		{Def{Kind: Daily, Start: "2026-11-01"}, "2026-11-02T00:00:00Z", "2026-11-01"},
		{Def{Kind: Daily, Start: "2026-11-01", End: "2026-11-10"}, "2030-01-01T00:00:00Z", "2026-11-10"},
		{Def{Kind: Daily, Start: "2026-11-01", Lag: 2 * time.Hour}, "2026-11-22T01:59:59Z", "2026-11-20"},
		{Def{Kind: Daily, Start: "2026-11-01", Lag: 2 * time.Hour}, "2026-11-22T02:00:00Z", "2026-11-21"},
		{Def{Kind: Daily, Start: "2026-01-01", Timezone: "Europe/Berlin"}, "2026-10-25T22:59:59Z", "2026-10-24"},
		{Def{Kind: Daily, Start: "2026-01-01", Timezone: "Europe/Berlin"}, "2026-10-25T23:00:00Z", "2026-10-25"},
		// In the repeated hour (second pass, 02:30 CET) the window 02 is not due yet.
		{Def{Kind: Hourly, Start: "2026-01-01T00", Timezone: "Europe/Berlin"}, "2026-10-25T01:30:00Z", "2026-10-25T01"},
		{Def{Kind: Hourly, Start: "2026-01-01T00", Timezone: "Europe/Berlin"}, "2026-10-25T02:00:00Z", "2026-10-25T02"},
		// Right after the skipped hour the last due one is 01.
		{Def{Kind: Hourly, Start: "2026-01-01T00", Timezone: "Europe/Berlin"}, "2026-03-29T01:30:00Z", "2026-03-29T01"},
		{Def{Kind: Hourly, Start: "2016-01-01T00"}, "2026-01-01T00:00:00Z", "2025-12-31T23"},
		{Def{Kind: Weekly, Start: "2020-W01"}, "2027-01-04T00:00:00Z", "2026-W53"},
		{Def{Kind: Monthly, Start: "2020-01", Timezone: "America/New_York"}, "2026-12-01T04:59:59Z", "2026-10"},
		{Def{Kind: Monthly, Start: "2020-01", Timezone: "America/New_York"}, "2026-12-01T05:00:00Z", "2026-11"},
		{Def{Kind: Daily, Start: "2011-12-01", Timezone: "Pacific/Apia"}, "2011-12-31T09:00:00Z", "2011-12-29"},
		{Def{Kind: Integer, Start: "3", End: "9"}, "2026-01-01T00:00:00Z", "9"},
		{Def{Kind: Integer}, "2026-01-01T00:00:00Z", ""},
		{Def{Kind: Static, Values: []string{"us", "eu", "asia"}}, "2026-01-01T00:00:00Z", "asia"},
	} {
		got, ok := tc.def.DueBefore(utc(t, tc.now))
		require.Equal(t, tc.want, got, "%+v at %s", tc.def, tc.now)
		require.Equal(t, tc.want != "", ok)
	}
}

// TestDueBeforeAgreesWithDue checks DueBefore against the definition of due
// for random instants: the answer is due, and its successor is not.
func TestDueBeforeAgreesWithDue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tz := range []string{"", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"} {
		for _, kind := range []Kind{Hourly, Daily, Weekly, Monthly} {
			def := Def{Kind: kind, Start: early[kind], Timezone: tz, Lag: 90 * time.Minute}
			for range 300 {
				now := utc(t, "2001-01-01T00:00:00Z").Add(time.Duration(r.Int64N(int64(30 * 365 * 24 * time.Hour))))
				last, ok := def.DueBefore(now)
				require.True(t, ok, "%s %s at %s", tz, kind, now)
				due, err := def.Due(last)
				require.NoError(t, err)
				require.False(t, due.After(now), "%s %s due %s after %s", tz, last, due, now)
				next, _ := def.Next(last)
				due, err = def.Due(next)
				require.NoError(t, err)
				require.True(t, due.After(now), "%s next %s due %s, not after %s", tz, next, due, now)
			}
		}
	}
}

// TestShortlexIsTimeOrder checks for every kind that the expected dataids,
// in the order the definition yields them, are strictly increasing
// shortlex and, for the time kinds, strictly increasing in time.
func TestShortlexIsTimeOrder(t *testing.T) {
	defs := []Def{
		{Kind: Hourly, Start: "2026-03-01T00", End: "2026-11-30T23", Timezone: "Europe/Berlin"},
		{Kind: Daily, Start: "1999-12-01", End: "2001-03-31", Timezone: "America/New_York"},
		{Kind: Weekly, Start: "2019-W50", End: "2027-W02"},
		{Kind: Monthly, Start: "0998-01", End: "1001-12"},
		{Kind: Integer, Start: "0", End: "2000"},
		{Kind: Static, Values: []string{"b", "a", "ab", "10", "9", "Z"}},
	}
	for _, d := range defs {
		ids := collect(t, d, "", "")
		require.NotEmpty(t, ids)
		var prevEnd time.Time
		for i, id := range ids {
			require.True(t, d.Contains(id), id)
			if i > 0 {
				require.Equal(t, -1, CompareDataID(ids[i-1], id), "%s then %s", ids[i-1], id)
			}
			if d.Kind.IsTime() {
				s, e, err := d.Window(id)
				require.NoError(t, err)
				require.False(t, s.Before(prevEnd), "%s starts before the previous one ends", id)
				prevEnd = e
			}
			if d.Kind == Integer {
				require.Equal(t, strconv.Itoa(i), id)
			}
		}
		shuffled := slices.Clone(ids)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		slices.SortFunc(shuffled, CompareDataID)
		require.Equal(t, ids, shuffled, fmt.Sprint(d.Kind))
	}
}

// BenchmarkDueBefore is the schedule of an hourly dataset that started ten
// years ago: DueBefore is arithmetic, its cost does not grow with history.
func BenchmarkDueBefore(b *testing.B) {
	for _, start := range []string{"2026-01-01T00", "2016-01-01T00"} {
		def := Def{Kind: Hourly, Start: start, Timezone: "Europe/Berlin"}
		now := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
		b.Run(start, func(b *testing.B) {
			for b.Loop() {
				if _, ok := def.DueBefore(now); !ok {
					b.Fatal("nothing due")
				}
			}
		})
	}
}
