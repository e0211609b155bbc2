package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/open"
	"github.com/chunklock/chunklock/backends/storecopy"
	"github.com/chunklock/chunklock/webhook"
)

func storeCommand() *cli.Command {
	return &cli.Command{
		Name:  "store",
		Usage: "copy a whole store between backends, back up the embedded store",
		Description: "Examples:\n" +
			"   chunklock store backup --data-dir ./chunklock-data --to ./chunklock-backup\n" +
			"   chunklock store copy --from ./chunklock-data --to postgres://chunklock@db:5432/chunklock",
		Commands: []*cli.Command{storeCopyCommand(), storeBackupCommand()},
	}
}

func storeCopyCommand() *cli.Command {
	return &cli.Command{
		Name:      "copy",
		Usage:     "copy a whole store into an empty one, of any backend, and verify the copy",
		UsageText: "chunklock store copy --from STORE --to STORE",
		Description: "Copies everything a store holds (datasets and jobs with their partition definitions, the jobs'\n" +
			"public keys and the credentials' ciphertext, status rows, fences, the jobs' queues, events,\n" +
			"resource locks, pools and slot records, records such as webhook cursors and backfills) into a\n" +
			"store that holds nothing yet, then reads the copy back and checks each kind's count and a\n" +
			"checksum of every item; any difference is an error.\n\n" +
			"STORE is a store URL as serve's --store takes it (postgres://..., etcd://..., etcds://...), or\n" +
			"dir:PATH for the embedded store in data directory PATH (a path without :// is one too).\n\n" +
			"Stop every server on both stores first: a copy is consistent only of a store nobody changes.\n" +
			"An embedded store in use by a server is refused; for PostgreSQL and etcd, that is up to you.\n" +
			"Secrets are copied encrypted: the jobs' keys (and a Vault) serve the copy as they did the source.\n\n" +
			"The copy numbers the events anew, in the same order (a webhook's position in the log moves with\n" +
			"it), gives resource locks new ids and records new versions; times keep microseconds.\n\n" +
			"Moving off the embedded store:\n\n" +
			"   chunklock store copy --from dir:./chunklock-data --to 'postgres://chunklock@db:5432/chunklock?sslmode=require'\n" +
			"   chunklock serve --store 'postgres://chunklock@db:5432/chunklock?sslmode=require' ...",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Required: true, Usage: "the `STORE` to copy (stopped)"},
			&cli.StringFlag{Name: "to", Required: true, Usage: "the `STORE` to copy into: it must hold nothing (a new database, schema, etcd prefix or data directory)"},
			&cli.DurationFlag{Name: "progress", Value: 5 * time.Second, Usage: "how often the copy of a kind reports how far it got (0: only when each kind is done)"},
		},
		Action: storeCopy,
	}
}

// storeArg reads a STORE argument: a store URL, or the data directory of
// an embedded store (dir:PATH, or a path without ://).
func storeArg(s string) (storeURL, dataDir string, err error) {
	switch {
	case s == "":
		return "", "", errors.New("empty store: give a store URL or dir:PATH")
	case strings.HasPrefix(s, "dir:"):
		if s == "dir:" {
			return "", "", errors.New("dir: needs a path: dir:./chunklock-data")
		}
		return "", strings.TrimPrefix(s, "dir:"), nil
	case !strings.Contains(s, "://"):
		return "", s, nil
	}
	return s, "", nil
}

// openDumper opens a STORE and returns its backend as a Dumper.
func openDumper(ctx context.Context, flag, arg string) (backends.Dumper, func() error, error) {
	storeURL, dir, err := storeArg(arg)
	if err != nil {
		return nil, nil, fmt.Errorf("--%s: %w", flag, err)
	}
	if dir != "" && flag == "from" {
		if _, err := os.Stat(filepath.Join(dir, "member")); err != nil {
			return nil, nil, fmt.Errorf("--from: %s is not the data directory of an embedded store (no member/ in it)", dir)
		}
	}
	// An embedded store of millions of chunks takes minutes to start
	// (etcd rebuilds its index of every key).
	opts := open.Options{DataDir: dir, Embedded: embedded.Config{SpaceInterval: -1, StartTimeout: time.Hour}}
	s, err := openStore(ctx, storeURL, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("--%s: %w", flag, err)
	}
	d, ok := open.Backend(s).(backends.Dumper)
	if !ok {
		s.Close()
		return nil, nil, fmt.Errorf("--%s: this store cannot be dumped", flag)
	}
	return d, s.Close, nil
}

func storeCopy(ctx context.Context, cmd *cli.Command) error {
	if cmd.String("from") == cmd.String("to") {
		return errors.New("--from and --to name the same store")
	}
	from, closeFrom, err := openDumper(ctx, "from", cmd.String("from"))
	if err != nil {
		return err
	}
	defer closeFrom()
	to, closeTo, err := openDumper(ctx, "to", cmd.String("to"))
	if err != nil {
		return err
	}
	defer closeTo()

	stderr := cmd.Root().ErrWriter
	start := time.Now()
	p := &progress{w: stderr, every: cmd.Duration("progress"), start: start}
	rep, err := storecopy.Copy(ctx, from, to, storecopy.Options{Batch: 5000, Progress: p.report, RemapRecord: webhook.RemapRecord})
	if errors.Is(err, storecopy.ErrNotEmpty) {
		return fmt.Errorf("--to: %w; give a new database, schema, etcd prefix or data directory", err)
	}
	printReport(cmd.Root().Writer, rep)
	if err != nil {
		return fmt.Errorf("store copy failed (the target holds a partial copy: drop it before trying again): %w", err)
	}
	var n int64
	for _, k := range rep {
		n += k.Target
	}
	fmt.Fprintf(stderr, "store copy: %d items copied and verified in %s\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}

// progress reports a long copy on stderr.
type progress struct {
	w          io.Writer
	every      time.Duration
	start      time.Time
	kindStart  time.Time
	last       time.Time
	lastKind   backends.DumpKind
	lastReport time.Time
}

func (p *progress) report(kind backends.DumpKind, n int64, done bool) {
	now := time.Now()
	if kind != p.lastKind {
		p.lastKind, p.kindStart, p.lastReport = kind, now, now
	}
	rate := float64(n) / max(now.Sub(p.kindStart).Seconds(), 1e-3)
	switch {
	case done:
		fmt.Fprintf(p.w, "store copy: %s: %d copied in %s (%.0f a second)\n", kind, n, now.Sub(p.kindStart).Round(time.Millisecond), rate)
	case p.every > 0 && now.Sub(p.lastReport) >= p.every:
		fmt.Fprintf(p.w, "store copy: %s: %d so far (%.0f a second)\n", kind, n, rate)
		p.lastReport = now
	}
}

func printReport(w io.Writer, rep []storecopy.KindReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tsource\ttarget\tchecksum\t")
	for _, k := range rep {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t\n", k.Kind, k.Source, k.Target, k.Sum)
	}
	tw.Flush()
}
