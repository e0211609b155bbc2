package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// checkSeeded asks the server, through the API, what a store built through
// the API would answer for a sample of the seeded history: the chunks and
// their rows, a page of rows, partitions across the edge of what was
// produced, a chunk's events, no live claim, and a findNext that claims
// exactly the first hour its job has not consumed (then completes it).
func checkSeeded(ctx context.Context, a *api, l layout) error {
	var claims struct{ Claims []struct{ Token string } }
	if err := a.do(ctx, `{ claims { token } }`, nil, &claims); err != nil {
		return err
	}
	if len(claims.Claims) > 0 {
		return fmt.Errorf("seeded store: %d live claims, want none", len(claims.Claims))
	}
	for _, i := range samplePairs(l) {
		if err := checkPair(ctx, a, l, i); err != nil {
			return fmt.Errorf("seeded store, pair %d (%s -> %s): %w", i, l.source(i), l.product(i), err)
		}
	}
	return nil
}

// samplePairs is the first, a middle and the last pair.
func samplePairs(l layout) []int {
	return slices.Compact([]int{0, l.pairs / 2, l.pairs - 1})
}

func checkPair(ctx context.Context, a *api, l layout, i int) error {
	c := l.consumed(i)
	for _, h := range slices.Compact([]int{0, c / 2, c - 1}) {
		if h < 0 {
			continue
		}
		id := l.dataid(h)
		if err := expect(ctx, a, chunkDoc(l.source(i), id), fmt.Sprintf("READY [OUTPUT - READY 0] [INPUT %s DONE 1]", l.job(i))); err != nil {
			return err
		}
		if err := expect(ctx, a, chunkDoc(l.product(i), id), fmt.Sprintf("READY [OUTPUT %s READY 1]", l.job(i))); err != nil {
			return err
		}
		if err := expect(ctx, a, eventsDoc(l.source(i), id),
			fmt.Sprintf("[OUTPUT - NONE>READY] [INPUT %[1]s NONE>RUNNING] [INPUT %[1]s RUNNING>DONE]", l.job(i))); err != nil {
			return err
		}
	}
	if c >= 3 {
		want := strings.Repeat(fmt.Sprintf("[INPUT %s DONE 1] [OUTPUT - READY 0] ", l.job(i)), 3)
		if err := expect(ctx, a, chunksDoc(l.source(i), l.dataid(c-3), l.dataid(c-1)), strings.TrimSpace(want)); err != nil {
			return err
		}
	}
	if err := expect(ctx, a, partitionsDoc(l.product(i), l.dataid(max(c-2, 0)), l.dataid(c+1)),
		partitionsWant(max(c-2, 0), c, c+1)); err != nil {
		return err
	}
	if err := expect(ctx, a, partitionsDoc(l.source(i), l.dataid(l.hours-2), l.dataid(l.hours+1)),
		partitionsWant(l.hours-2, l.hours, l.hours+1)); err != nil {
		return err
	}
	return checkFindNext(ctx, a, l, i)
}

// partitionsWant is READY for hours [from, ready), NONE up to to.
func partitionsWant(from, ready, to int) string {
	var s []string
	for h := from; h <= to; h++ {
		if h < ready {
			s = append(s, "READY")
		} else {
			s = append(s, "NONE")
		}
	}
	return strings.Join(s, " ")
}

// checkFindNext claims the next chunk of job i, which must be the first
// hour it has not consumed, and completes it.
func checkFindNext(ctx context.Context, a *api, l layout, i int) error {
	var out struct {
		FindNext *struct {
			Token, Dataid string
			Attempt       int
		}
	}
	if err := a.do(ctx, `mutation($j: String!) { findNext(job: $j, executor: "scale-check") { token dataid attempt } }`,
		map[string]any{"j": l.job(i)}, &out); err != nil {
		return err
	}
	want := l.dataid(l.consumed(i))
	if out.FindNext == nil || out.FindNext.Dataid != want || out.FindNext.Attempt != 1 {
		return fmt.Errorf("findNext(%s) = %+v, want a first attempt at %s", l.job(i), out.FindNext, want)
	}
	return a.do(ctx, `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": out.FindNext.Token}, nil)
}

// A check is a document and a function that renders its answer as a
// short string to compare.
type check struct {
	doc    string
	render func(data map[string]any) string
}

func expect(ctx context.Context, a *api, c check, want string) error {
	var data map[string]any
	if err := a.do(ctx, c.doc, nil, &data); err != nil {
		return fmt.Errorf("%s: %w", c.doc, err)
	}
	if got := c.render(data); got != want {
		return fmt.Errorf("%s answered\n  %s\nwant\n  %s", c.doc, got, want)
	}
	return nil
}

func chunkDoc(dataset, dataid string) check {
	return check{fmt.Sprintf(`{ chunk(dataset: %q, dataid: %q) { status rows { role job status attempt } } }`, dataset, dataid),
		func(d map[string]any) string {
			c := d["chunk"].(map[string]any)
			return fmt.Sprint(c["status"]) + " " + renderRows(c["rows"].([]any))
		}}
}

func chunksDoc(dataset, from, to string) check {
	return check{fmt.Sprintf(`{ chunks(dataset: %q, from: %q, to: %q, first: 100) { edges { node { role job status attempt } } } }`, dataset, from, to),
		func(d map[string]any) string {
			var rows []any
			for _, e := range d["chunks"].(map[string]any)["edges"].([]any) {
				rows = append(rows, e.(map[string]any)["node"])
			}
			return renderRows(rows)
		}}
}

func renderRows(rows []any) string {
	var s []string
	for _, r := range rows {
		m := r.(map[string]any)
		job := "-"
		if m["job"] != nil {
			job = fmt.Sprint(m["job"])
		}
		s = append(s, fmt.Sprintf("[%s %s %s %v]", m["role"], job, m["status"], m["attempt"]))
	}
	return strings.Join(s, " ")
}

func eventsDoc(dataset, dataid string) check {
	return check{fmt.Sprintf(`{ events(dataset: %q, dataid: %q, first: 100) { edges { node { role job from to } } } }`, dataset, dataid),
		func(d map[string]any) string {
			var s []string
			for _, e := range d["events"].(map[string]any)["edges"].([]any) {
				m := e.(map[string]any)["node"].(map[string]any)
				job := "-"
				if m["job"] != nil {
					job = fmt.Sprint(m["job"])
				}
				s = append(s, fmt.Sprintf("[%s %s %s>%s]", m["role"], job, m["from"], m["to"]))
			}
			return strings.Join(s, " ")
		}}
}

func partitionsDoc(dataset, from, to string) check {
	return check{fmt.Sprintf(`{ partitions(dataset: %q, from: %q, to: %q, first: 100) { edges { node { status } } } }`, dataset, from, to),
		func(d map[string]any) string {
			var s []string
			for _, e := range d["partitions"].(map[string]any)["edges"].([]any) {
				s = append(s, fmt.Sprint(e.(map[string]any)["node"].(map[string]any)["status"]))
			}
			return strings.Join(s, " ")
		}}
}
