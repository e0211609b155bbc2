package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// printReport prints the figures as a Markdown table, the seeded store's
// against the empty one's.
func printReport(w io.Writer, c config, l layout, rs []*phaseResult) {
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(w, "\nstore=%s scale=%dx%d (%d chunks seeded) runners=%d rate=%.0f/s duration=%s cpus=%d load=%s\n\n",
		c.store, 2*l.pairs, l.hours, l.chunks(), c.traffic.runners, c.traffic.rate, c.traffic.duration, runtime.NumCPU(),
		strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	head := "| figure |"
	sep := "| --- |"
	for _, r := range rs {
		head += " " + r.name + " |"
		sep += " ---: |"
	}
	if len(rs) == 2 {
		head += " ratio |"
		sep += " ---: |"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, sep)
	for _, f := range figures(c) {
		line := "| " + f.name + " |"
		vals := make([]float64, len(rs))
		for i, r := range rs {
			v, s := f.get(r)
			vals[i] = v
			line += " " + s + " |"
		}
		if len(rs) == 2 {
			line += " " + ratio(vals[0], vals[1]) + " |"
		}
		fmt.Fprintln(w, line)
	}
	for _, r := range rs {
		if r.seed.chunks > 0 {
			printPerChunk(w, c, l, rs[0], r)
		}
		for _, err := range []error{r.statusErr, r.overviewErr, r.traffic.firstErr} {
			if err != nil {
				fmt.Fprintf(w, "%s: %v\n", r.name, err)
			}
		}
	}
}

// printPerChunk prints what a chunk costs the store: the seeded store's
// size after the seed, less the empty store's, per chunk; on PostgreSQL
// per status row and per event (each table with its indexes); on etcd the
// keys and bytes of keys and values each kind of chunk writes, and the
// database's bytes per byte written.
func printPerChunk(w io.Writer, c config, l layout, empty, r *phaseResult) {
	if empty == r {
		empty = &phaseResult{}
	}
	fmt.Fprintf(w, "\nseed: %s\n", r.seed)
	fmt.Fprintf(w, "bytes per chunk (store size after the seed, less the empty store's): %.0f\n",
		float64(r.seeded.total-empty.seeded.total)/float64(r.seed.chunks))
	if c.store == "postgres" {
		row := float64(r.seeded.tables["status_rows"]-empty.seeded.tables["status_rows"]) / float64(r.seed.rows)
		ev := float64(r.seeded.tables["events"]-empty.seeded.tables["events"]) / float64(r.seed.events)
		fmt.Fprintf(w, "bytes per status row %.0f, per event %.0f (tables with their indexes): a source chunk (1 row, 1 event) about %.0f, a produced chunk (2 rows, 4 events) about %.0f\n",
			row, ev, row+ev, 2*row+4*ev)
		return
	}
	e := etcdStore{prefix: etcdPrefix}
	src, prod := e.chunkSizes(l)
	written := float64(l.pairs*l.hours*src.bytes + (r.seed.chunks-l.pairs*l.hours)*prod.bytes)
	ratio := float64(r.seeded.total-empty.seeded.total) / written
	fmt.Fprintf(w, "a source chunk writes %d keys of %d bytes (keys and values), a produced chunk %d keys of %d bytes; the database grew %.2f bytes per byte written: a source chunk about %.0f bytes of it, a produced chunk about %.0f\n",
		src.keys, src.bytes, prod.keys, prod.bytes, ratio, ratio*float64(src.bytes), ratio*float64(prod.bytes))
}

// figure is one line of the table.
type figure struct {
	name string
	get  func(r *phaseResult) (float64, string)
}

func figures(c config) []figure {
	ms := func(name string, f func(r *phaseResult) time.Duration) figure {
		return figure{name, func(r *phaseResult) (float64, string) { d := f(r); return float64(d), fmtDur(d) }}
	}
	bytes := func(name string, f func(r *phaseResult) int64) figure {
		return figure{name, func(r *phaseResult) (float64, string) { b := f(r); return float64(b), mib(b) }}
	}
	failable := func(name string, f func(r *phaseResult) (time.Duration, error)) figure {
		return figure{name, func(r *phaseResult) (float64, string) {
			d, err := f(r)
			if err != nil {
				return float64(d), "failed after " + fmtDur(d)
			}
			return float64(d), fmtDur(d)
		}}
	}
	count := func(name string, f func(r *phaseResult) int) figure {
		return figure{name, func(r *phaseResult) (float64, string) { n := f(r); return float64(n), fmt.Sprint(n) }}
	}
	fs := []figure{
		bytes("store size after the seed", func(r *phaseResult) int64 { return r.seeded.total }),
		bytes("store size at the end", func(r *phaseResult) int64 { return r.final.total }),
	}
	if c.store == "postgres" {
		for _, t := range []string{"status_rows", "events", "candidates"} {
			fs = append(fs, bytes("  "+t, func(r *phaseResult) int64 { return r.final.tables[t] }))
		}
	} else {
		fs = append(fs, bytes("  etcd db in use at the end", func(r *phaseResult) int64 { return r.final.inUse }),
			bytes("  data directory at the end", func(r *phaseResult) int64 { return r.final.disk }))
	}
	return append(fs,
		ms("server start (exec to /readyz 200)", func(r *phaseResult) time.Duration { return r.start }),
		bytes("server RSS after start", func(r *phaseResult) int64 { return r.rssStart }),
		bytes("server RSS at the end", func(r *phaseResult) int64 { return r.rssEnd }),
		bytes("server peak RSS", func(r *phaseResult) int64 { return r.peak }),
		count("claims (findNext -> complete cycles)", func(r *phaseResult) int { return r.traffic.complete.n() }),
		ms("findNext p50 (a claim)", func(r *phaseResult) time.Duration { return r.traffic.findNext.quantile(0.5) }),
		ms("findNext p99 (a claim)", func(r *phaseResult) time.Duration { return r.traffic.findNext.quantile(0.99) }),
		ms("findNext p50 (null)", func(r *phaseResult) time.Duration { return r.traffic.findNone.quantile(0.5) }),
		ms("complete p50", func(r *phaseResult) time.Duration { return r.traffic.complete.quantile(0.5) }),
		ms("complete p99", func(r *phaseResult) time.Duration { return r.traffic.complete.quantile(0.99) }),
		ms("publish p50", func(r *phaseResult) time.Duration { return r.traffic.publish.quantile(0.5) }),
		ms("chunks page of 100 p50", func(r *phaseResult) time.Duration { return r.traffic.chunksPage.quantile(0.5) }),
		ms("chunks page of 100 p99", func(r *phaseResult) time.Duration { return r.traffic.chunksPage.quantile(0.99) }),
		ms("partitions page of 100 p50", func(r *phaseResult) time.Duration { return r.traffic.partitionsPage.quantile(0.5) }),
		ms("partitions page of 100 p99", func(r *phaseResult) time.Duration { return r.traffic.partitionsPage.quantile(0.99) }),
		count("traffic errors", func(r *phaseResult) int { return r.traffic.errors }),
		ms("dashboard: catalog query", func(r *phaseResult) time.Duration { return r.overview.catalog }),
		ms("dashboard: grid cells", func(r *phaseResult) time.Duration { return r.overview.cells }),
		count("  grid requests", func(r *phaseResult) int { return r.overview.requests }),
		count("  grid cells read", func(r *phaseResult) int { return r.overview.cellsRead }),
		ms("dashboard: first paint (catalog + cells)", func(r *phaseResult) time.Duration { return r.overview.catalog + r.overview.cells }),
		failable("dashboard: partition summaries", func(r *phaseResult) (time.Duration, error) { return r.overview.summaries, r.overviewErr }),
		failable("chunklock status (wall)", func(r *phaseResult) (time.Duration, error) { return r.status, r.statusErr }),
		count("  lines printed", func(r *phaseResult) int { return r.statusLines }),
	)
}

func ratio(a, b float64) string {
	if a == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", b/a)
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
}
