package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// civilBack is the reference for countFrom in UTC: the dataid k periods of
// kind before the period holding t, by Go's own calendar (time.Date
// normalizes a month or day out of range), and that period's first instant.
func civilBack(kind partition.Kind, t time.Time, k int) (string, time.Time) {
	switch kind {
	case partition.Hourly:
		b := t.Truncate(time.Hour).AddDate(0, 0, -k/24).Add(-time.Duration(k%24) * time.Hour)
		return b.Format("2006-01-02T15"), b
	case partition.Daily:
		b := time.Date(t.Year(), t.Month(), t.Day()-k, 0, 0, 0, 0, time.UTC)
		return b.Format(time.DateOnly), b
	case partition.Weekly:
		monday := time.Date(t.Year(), t.Month(), t.Day()-(int(t.Weekday())+6)%7, 0, 0, 0, 0, time.UTC)
		b := monday.AddDate(0, 0, -7*k)
		y, w := b.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w), b
	default:
		b := time.Date(t.Year(), t.Month()-time.Month(k), 1, 0, 0, 0, 0, time.UTC)
		return b.Format("2006-01"), b
	}
}

// randomInstant is an instant between year 1 and the end of year 9999.
func randomInstant(r *rand.Rand) time.Time {
	lo := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(9999, 12, 25, 0, 0, 0, 0, time.UTC).Unix()
	return time.Unix(lo+r.Int64N(hi-lo), 0).UTC()
}

// TestCountFromEveryKind: for every time kind, with a start and a last due
// dataid anywhere from year 1 to 9999, a count starts exactly
// MaxPartitionCount-1 periods of the kind's calendar before the last due
// dataid, or at the definition's start ("") when the history is not
// longer. Windows of weeks and months are too long to multiply by
// MaxPartitionCount as a time.Duration: that overflowed and counted from
// the wrong place (or from after lastDue: nothing).
func TestCountFromEveryKind(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 3))
	for _, kind := range []partition.Kind{partition.Hourly, partition.Daily, partition.Weekly, partition.Monthly} {
		for i := range 400 {
			a, b := randomInstant(r), randomInstant(r)
			if i%4 == 0 { // a history just longer or shorter than the bound
				_, b0 := civilBack(kind, b, backends.MaxPartitionCount-2+r.IntN(3))
				a = b0
				if a.Year() < 1 {
					a = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
				}
			}
			if a.After(b) {
				a, b = b, a
			}
			start, startAt := civilBack(kind, a, 0)
			last, _ := civilBack(kind, b, 0)
			def := partition.Def{Kind: kind, Start: start}
			want, wantAt := civilBack(kind, b, backends.MaxPartitionCount-1)
			if !wantAt.After(startAt) {
				want = ""
			}
			require.Equal(t, want, countFrom(def, last), "%s from %s, last due %s", kind, start, last)
		}
	}
}

// TestCountFromBoundsTheCount: in zones whose clocks skip hours and a day,
// the count from countFrom to the last due dataid holds at most
// MaxPartitionCount expected dataids, and one more lies before it.
func TestCountFromBoundsTheCount(t *testing.T) {
	for _, tz := range []string{"Europe/Berlin", "Pacific/Apia"} {
		for kind, ids := range map[partition.Kind][2]string{
			partition.Hourly:  {"2000-01-01T00", "2012-06-30T23"},
			partition.Daily:   {"1700-01-01", "2012-01-05"},
			partition.Weekly:  {"0001-W01", "9999-W52"},
			partition.Monthly: {"0001-01", "9999-12"},
		} {
			def := partition.Def{Kind: kind, Start: ids[0], Timezone: tz}
			from := countFrom(def, ids[1])
			require.NotEmpty(t, from, "%s %s", kind, tz)
			_, ok := def.Prev(from)
			require.True(t, ok, "%s %s: the count from %s leaves out dataids before it", kind, tz, from)
			seq, err := def.Range(from, ids[1])
			require.NoError(t, err)
			n := 0
			for range seq {
				n++
			}
			require.LessOrEqual(t, n, backends.MaxPartitionCount, "%s %s from %s", kind, tz, from)
			require.Greater(t, n, backends.MaxPartitionCount-30, "%s %s from %s: about MaxPartitionCount", kind, tz, from)
		}
	}
}

// TestCountFromInteger: an INTEGER history is counted over its last
// MaxPartitionCount dataids, even one that ends at the largest integer.
func TestCountFromInteger(t *testing.T) {
	for _, tc := range []struct{ start, last, want string }{
		{"", "99999", ""},
		{"", "100000", "1"},
		{"5", "100004", ""},
		{"5", "100005", "6"},
		{"0", "18446744073709551615", "18446744073709451616"},
	} {
		def := partition.Def{Kind: partition.Integer, Start: tc.start, End: tc.last}
		require.Equal(t, tc.want, countFrom(def, tc.last), "%+v", tc)
	}
	require.Equal(t, "", countFrom(partition.Def{Kind: partition.Static, Values: []string{"a"}}, "a"))
}
