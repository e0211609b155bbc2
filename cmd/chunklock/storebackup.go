package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

func storeBackupCommand() *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "back up a running embedded store into a new data directory",
		UsageText: "chunklock store backup --data-dir DIR --to NEWDIR",
		Description: "Takes a consistent snapshot of the embedded store of a running chunklock serve (etcd's\n" +
			"snapshot, through the store's socket in its data directory; the server goes on serving), and\n" +
			"restores it into NEWDIR, which must not exist: a data directory like the original, as it was at\n" +
			"one instant. Serve it (chunklock serve --data-dir NEWDIR) or copy it anywhere:\n\n" +
			"   chunklock store backup --data-dir ./chunklock-data --to /backups/chunklock-2026-11-26\n" +
			"   chunklock store copy --from dir:/backups/chunklock-2026-11-26 --to 'postgres://...'\n\n" +
			"A stopped embedded store is backed up by copying its data directory. PostgreSQL stores are\n" +
			"backed up with PostgreSQL's tools (pg_dump, or pg_basebackup and WAL archiving), etcd\n" +
			"clusters with etcdctl snapshot save (README: Outgrowing the embedded store).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", Value: "./chunklock-data", Sources: cli.EnvVars("CHUNKLOCK_DATA_DIR"), Usage: "`directory` of the running server's embedded store"},
			&cli.StringFlag{Name: "etcd-client-addr", Sources: cli.EnvVars("CHUNKLOCK_ETCD_CLIENT_ADDR"), DefaultText: "the unix socket <data-dir>/etcd.sock",
				Usage: "`host:port` of the embedded store, when the server was started with --etcd-client-addr"},
			&cli.StringFlag{Name: "to", Required: true, Usage: "new `directory` to restore the backup into (must not exist)"},
		},
		Action: storeBackup,
	}
}

func storeBackup(ctx context.Context, cmd *cli.Command) error {
	dir, to := cmd.String("data-dir"), cmd.String("to")
	if _, err := os.Stat(to); err == nil {
		return fmt.Errorf("--to %s exists: give a new directory", to)
	}
	endpoint := "unix://" + filepath.Join(dir, embedded.SocketName)
	if a := cmd.String("etcd-client-addr"); a != "" {
		endpoint = "http://" + a
	} else if _, err := os.Stat(filepath.Join(dir, embedded.SocketName)); err != nil {
		return fmt.Errorf("no server runs on %s (no %s in it): back up a stopped store by copying its directory", dir, embedded.SocketName)
	}
	abs, err := filepath.Abs(to)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return err
	}
	snap := abs + ".snapshot.db"
	defer os.Remove(snap)
	start := time.Now()
	mgr := snapshot.NewV3(zap.NewNop())
	sctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if _, err := mgr.Save(sctx, clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}, snap); err != nil {
		return fmt.Errorf("taking the snapshot through %s (is chunklock serve running on %s?): %w", endpoint, dir, err)
	}
	st, err := os.Stat(snap)
	if err != nil {
		return err
	}
	err = mgr.Restore(snapshot.RestoreConfig{
		SnapshotPath: snap, Name: "chunklock", OutputDataDir: abs,
		PeerURLs: []string{"http://127.0.0.1:2380"}, InitialCluster: "chunklock=http://127.0.0.1:2380", InitialClusterToken: "chunklock",
	})
	if err != nil {
		return fmt.Errorf("restoring the snapshot into %s: %w", to, err)
	}
	fmt.Fprintf(cmd.Root().ErrWriter, "store backup: %s of %s restored into %s in %s; serve it with chunklock serve --data-dir %s, or move it with chunklock store copy --from dir:%s\n",
		embedded.Bytes(st.Size()), dir, to, time.Since(start).Round(time.Millisecond), to, to)
	return nil
}
