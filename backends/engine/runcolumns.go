package engine

import (
	"github.com/chunklock/chunklock/backends"
	"strings"

	"fmt"
	"time"

	"github.com/chunklock/chunklock/backends/partition"
)

// Columns of PartitionRuns: the calendar period of a coarser time kind that
// holds a dataid, found from the dataid alone (its local date), so that
// datasets in different zones share one axis of days, weeks and months.

// kindRank orders the time kinds from the finest.
var kindRank = map[partition.Kind]int{partition.Hourly: 1, partition.Daily: 2, partition.Weekly: 3, partition.Monthly: 4}

// finer reports whether time kind k is finer than zoom.
func finer(k, zoom partition.Kind) bool {
	return kindRank[k] > 0 && kindRank[k] < kindRank[zoom]
}

// columnOf maps the dataids of one time kind to their column at a coarser
// zoom. It remembers the last date it mapped: the hours of a day share it.
type columnOf struct {
	kind, zoom partition.Kind
	// tuple: the dataids are multi-dimensional, their first value of kind.
	tuple    bool
	lastDate string
	lastKey  string
}

// key is the column of id: a dataid of the zoom's kind.
func (c *columnOf) key(id string) string {
	if c.tuple {
		id, _, _ = strings.Cut(id, "|")
	}
	date := id
	switch c.kind {
	case partition.Hourly:
		date = id[:min(len(id), 10)]
	case partition.Weekly:
		date = weekThursday(id)
	}
	if date == c.lastDate {
		return c.lastKey
	}
	c.lastDate, c.lastKey = date, date
	switch c.zoom {
	case partition.Weekly:
		if t, err := time.Parse(time.DateOnly, date); err == nil {
			y, w := t.ISOWeek()
			c.lastKey = fmt.Sprintf("%04d-W%02d", y, w)
		}
	case partition.Monthly:
		c.lastKey = date[:min(len(date), 7)]
	}
	return c.lastKey
}

// weekThursday is the date of the Thursday of an ISO week (2026-W05): the
// day that puts the week in its year, and here in its month.
func weekThursday(id string) string {
	var y, w int
	if _, err := fmt.Sscanf(id, "%4d-W%2d", &y, &w); err != nil {
		return ""
	}
	jan4 := time.Date(y, time.January, 4, 0, 0, 0, 0, time.UTC)
	monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
	return monday.AddDate(0, 0, 7*(w-1)+3).Format(time.DateOnly)
}

// columnTally counts the partitions of the column being scanned.
type columnTally struct {
	key string
	c   backends.PartitionColumnRun
}

func (t *columnTally) take(st backends.Status, late bool) {
	t.c.Count++
	switch st {
	case backends.StatusReady:
		t.c.Ready++
	case backends.StatusRunning:
		t.c.Running++
	case backends.StatusFailed:
		t.c.Failed++
	case backends.StatusResubmit:
		t.c.Resubmit++
	case backends.StatusHold:
		t.c.Hold++
	default:
		t.c.Missing++
	}
	if late {
		t.c.Late++
	}
}

// run is the column as a run of one column.
func (t columnTally) run() backends.PartitionColumnRun {
	c := t.c
	c.From, c.To, c.Columns = t.key, t.key, 1
	return c
}

// sameCounts reports whether two column runs hold the same counts.
func sameCounts(a, b backends.PartitionColumnRun) bool {
	a.From, a.To, a.Columns = b.From, b.To, b.Columns
	return a == b
}
