package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
)

func graphCommand() *cli.Command {
	return &cli.Command{
		Name:      "graph",
		Category:  catView,
		Usage:     "print the lock graph (jobs, datasets, chunks, who reads and writes what) as DOT or Mermaid",
		UsageText: "chunklock graph [--job J | --dataset D] [--dataid X] [--format dot|mermaid]",
		Description: "The whole pipeline, or the part around a job (its inputs and output) or a dataset (its\n" +
			"producer and consumers). With --dataid, one node per chunk, and each edge carries the\n" +
			"job's row status on it and the locks that row holds. Data flows along the arrows:\n" +
			"dataset -> job for READS, job -> dataset for WRITES.\n\n" +
			"Examples:\n" +
			"   chunklock graph | dot -Tsvg > pipeline.svg\n" +
			"   chunklock graph --job report --dataid 2026-01-15 --format mermaid" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "job", Usage: "centre on this `job`"},
			&cli.StringFlag{Name: "dataset", Usage: "centre on this `dataset`"},
			&cli.StringFlag{Name: "dataid", Usage: "show the chunks at this `dataid` and their locks"},
			&cli.StringFlag{Name: "format", Value: "dot", Usage: "`dot` (Graphviz) or mermaid"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			format := cmd.String("format")
			if format != "dot" && format != "mermaid" {
				return fmt.Errorf("--format %q: want dot or mermaid", format)
			}
			g, err := c.LockGraph(ctx, cmd.String("job"), cmd.String("dataset"), cmd.String("dataid"))
			if err != nil {
				return err
			}
			if id := cmd.String("dataid"); id != "" {
				switch without := jobsWithoutChunks(g); {
				case !chunkEdges(g):
					fmt.Fprintf(stderr(cmd), "chunklock graph: no chunk at dataid %s is read or written here; a dataset with dimensions names its chunks by tuple (2026-01-15|eu): `chunklock chunks --dataset D` lists them\n", id)
				case len(without) > 0:
					fmt.Fprintf(stderr(cmd), "chunklock graph: job(s) %s read or write no chunk at dataid %s: their datasets name chunks otherwise (a tuple such as 2026-01-15|eu, a week such as 2026-W03); `chunklock chunks --dataset D` lists them\n", strings.Join(without, ", "), id)
				}
			}
			if format == "mermaid" {
				return writeMermaid(stdout(cmd), g)
			}
			return writeDot(stdout(cmd), g)
		}),
	}
}

// chunkEdges tells whether an edge of g reaches a chunk.
func chunkEdges(g client.LockGraph) bool {
	chunks := map[string]bool{}
	for _, n := range g.Nodes {
		if n.Kind == "CHUNK" {
			chunks[n.ID] = true
		}
	}
	for _, e := range g.Edges {
		if chunks[e.From] || chunks[e.To] {
			return true
		}
	}
	return false
}

// jobsWithoutChunks lists the jobs of g that no edge joins to a chunk,
// when some other job has one: at the dataid asked, their datasets have
// no chunk (a tuple, a week, another kind of dataid).
func jobsWithoutChunks(g client.LockGraph) []string {
	kind := map[string]string{}
	job := map[string]string{}
	for _, n := range g.Nodes {
		kind[n.ID] = n.Kind
		if n.Kind == "JOB" {
			job[n.ID] = n.Job
		}
	}
	with := map[string]bool{}
	for _, e := range g.Edges {
		for _, pair := range [][2]string{{e.From, e.To}, {e.To, e.From}} {
			if kind[pair[0]] == "JOB" && kind[pair[1]] == "CHUNK" {
				with[pair[0]] = true
			}
		}
	}
	if len(with) == 0 {
		return nil
	}
	var out []string
	for id, name := range job {
		if !with[id] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// nodeLabel is what a node shows.
func nodeLabel(n client.GraphNode) string {
	switch n.Kind {
	case "JOB":
		return n.Job
	case "DATASET":
		return n.Dataset
	}
	return n.Dataset + " " + n.DataID + "\n" + n.Status
}

// edgeLabel is what an edge shows: its kind, and on chunks the row status
// and its locks.
func edgeLabel(e client.GraphEdge) string {
	parts := []string{e.Kind}
	if e.Mapping != nil {
		parts = append(parts, mappingLabel(e.Mapping.Mapping))
	}
	if e.Status != "" {
		parts = append(parts, e.Status)
	}
	if len(e.Locks) > 0 {
		parts = append(parts, strings.Join(e.Locks, "+"))
	}
	return strings.Join(parts, " ")
}

// mappingLabel describes a mapping: its kind, and a TIME_WINDOW's offsets
// in input windows when it has any ("TIME_WINDOW -6..0" for a 7-day
// lookback).
func mappingLabel(m partition.Mapping) string {
	if m.Kind == partition.TimeWindow && (m.StartOffset != 0 || m.EndOffset != 0) {
		return fmt.Sprintf("%s %d..%d", m.Kind, m.StartOffset, m.EndOffset)
	}
	return string(m.Kind)
}

// flow orients an edge along the data: dataset -> job for READS.
func flow(e client.GraphEdge) (from, to string) {
	if e.Kind == "READS" {
		return e.To, e.From
	}
	return e.From, e.To
}

func writeDot(w io.Writer, g client.LockGraph) error {
	var b strings.Builder
	b.WriteString("digraph chunklock {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	for _, n := range g.Nodes {
		attrs := map[string]string{"JOB": "shape=box, style=rounded", "DATASET": "shape=cylinder", "CHUNK": "shape=note"}[n.Kind]
		if c := dotColor[n.Status]; c != "" {
			attrs += ", style=filled, fillcolor=\"" + c + "\""
		}
		fmt.Fprintf(&b, "  %s [label=%s, %s];\n", strconv.Quote(n.ID), strconv.Quote(nodeLabel(n)), attrs)
	}
	for _, e := range g.Edges {
		from, to := flow(e)
		style := ""
		if e.Kind == "WRITES" {
			style = ", style=bold"
		}
		fmt.Fprintf(&b, "  %s -> %s [label=%s%s];\n", strconv.Quote(from), strconv.Quote(to), strconv.Quote(edgeLabel(e)), style)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var dotColor = map[string]string{"RUNNING": "lightblue", "READY": "palegreen", "FAILED": "salmon", "RESUBMIT": "khaki", "HOLD": "plum"}

func writeMermaid(w io.Writer, g client.LockGraph) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	ids := map[string]string{}
	for i, n := range g.Nodes {
		id := "n" + strconv.Itoa(i)
		ids[n.ID] = id
		label := mermaidText(nodeLabel(n))
		switch n.Kind {
		case "JOB":
			fmt.Fprintf(&b, "  %s([\"%s\"])\n", id, label)
		case "DATASET":
			fmt.Fprintf(&b, "  %s[(\"%s\")]\n", id, label)
		default:
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", id, label)
		}
		if n.Status != "" && n.Status != "NONE" {
			fmt.Fprintf(&b, "  class %s %s\n", id, strings.ToLower(n.Status))
		}
	}
	for _, e := range g.Edges {
		from, to := flow(e)
		arrow := "-->"
		if e.Kind == "WRITES" {
			arrow = "==>"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[from], arrow, mermaidText(edgeLabel(e)), ids[to])
	}
	for _, s := range statusOrder {
		fmt.Fprintf(&b, "  classDef %s fill:%s\n", strings.ToLower(s), dotColor[s])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mermaidText escapes text for a quoted Mermaid label.
func mermaidText(s string) string {
	s = strings.ReplaceAll(s, `"`, "#quot;")
	return strings.ReplaceAll(s, "\n", "<br/>")
}
