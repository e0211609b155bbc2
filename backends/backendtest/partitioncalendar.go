package backendtest

import (
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

// mondayOf is the Monday that begins the ISO week holding t.
func mondayOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day()-(int(t.Weekday())+6)%7, 0, 0, 0, 0, time.UTC)
}

// testPartitionCountsLongWindows: missing and late counts of weeks and
// months, whose windows are long, over histories from year 1 (SPEC §8
// "Missing and late"): every due month and week is counted, a history
// longer than MaxPartitionCount included.
func (s *suite) testPartitionCountsLongWindows(t *testing.T) {
	b := s.setup(t)
	deadline := 24 * time.Hour
	b.definedDataset("monthly", partition.Def{Kind: partition.Monthly, Start: "2020-01", Deadline: &deadline})
	b.definedDataset("weekly", partition.Def{Kind: partition.Weekly, Start: "1700-W01"})
	b.definedDataset("months", partition.Def{Kind: partition.Monthly, Start: "0001-01"})
	b.definedDataset("weeks", partition.Def{Kind: partition.Weekly, Start: "0001-W01"})
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC) // the last due month, 2026-10, has 31 days
	b.clock.Advance(now.Sub(b.clock.Now()))
	lastWeek := mondayOf(now).AddDate(0, 0, -7) // 2026-10-19, 2026-W43
	// In seconds: a time.Duration holds at most 292 years.
	weeksSince := func(from time.Time) int { return int((lastWeek.Unix()-from.Unix())/(7*86400)) + 1 }

	for _, tc := range []struct {
		dataset, oldest string
		missing, late   int
		truncated       bool
	}{
		{"monthly", "2020-01", 82, 81, false}, // 2026-10 is late from 2026-11-02
		{"weekly", "1700-W01", weeksSince(mondayOf(time.Date(1700, 1, 4, 0, 0, 0, 0, time.UTC))), 0, false},
		{"months", "0001-01", 2025*12 + 10, 0, false},
		// 0001-01-01 is a Monday, of week 1 of ISO year 1.
		{"weeks", "0001-W01", weeksSince(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)), 0, false},
	} {
		c, err := b.s.PartitionCounts(b.ctx, tc.dataset)
		require.NoError(t, err, tc.dataset)
		require.Equal(t, tc.missing, c.Missing, tc.dataset)
		require.Equal(t, tc.oldest, c.OldestMissing, tc.dataset)
		require.Equal(t, tc.late, c.Late, tc.dataset)
		require.Equal(t, tc.truncated, c.Truncated, tc.dataset)
	}
	require.Equal(t, 17_052, weeksSince(mondayOf(time.Date(1700, 1, 4, 0, 0, 0, 0, time.UTC))), "1700-W01 to 2026-W43")
	require.Equal(t, 105_702, weeksSince(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)), "0001-W01 to 2026-W43")
}

// testPartitionZones: a definition's time zone is a name of the IANA
// database the binary carries (SPEC §8), links such as UTC and US/Eastern
// included, so that every replica reads it alike; names that only some
// hosts' zoneinfo has (posix/..., right/..., posixrules, Factory) are
// INVALID_ARGUMENT, saying what to name instead, and store nothing.
func (s *suite) testPartitionZones(t *testing.T) {
	b := s.setup(t)
	for _, zone := range []string{"UTC", "Etc/UTC", "GMT", "US/Eastern", "Asia/Calcutta", "Europe/Berlin"} {
		b.definedDataset("d", partition.Def{Kind: partition.Daily, Start: "2026-01-01", Timezone: zone})
	}
	for zone, says := range map[string]string{
		"posix/Europe/Berlin": `"Europe/Berlin"`, "right/UTC": `"UTC"`, "posixrules": `"America/New_York"`,
		"Factory": "IANA zone", "Local": "IANA zone", "Mars/Base": "unknown time zone",
	} {
		_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "d",
			Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", Timezone: zone}})
		requireCode(t, err, backends.CodeInvalidArgument, zone)
		require.ErrorContains(t, err, says, zone)
	}
	d, err := b.s.Dataset(b.ctx, "d")
	require.NoError(t, err)
	require.Equal(t, "Europe/Berlin", d.Partitions.Timezone, "a refused definition stores nothing")
}
