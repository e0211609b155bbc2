package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/open"
	"github.com/chunklock/chunklock/keys/keyring"
	"github.com/chunklock/chunklock/server"
	"github.com/chunklock/chunklock/webhook"
)

func serveCommand() *cli.Command {
	d := server.DefaultConfig()
	env := func(name string) cli.ValueSourceChain { return cli.EnvVars("CHUNKLOCK_" + name) }
	return &cli.Command{
		Name:  "serve",
		Usage: "run the chunklock GraphQL server",
		Description: "Serves GraphQL at /graphql (POST; GET for queries; websocket graphql-transport-ws for\n" +
			"subscriptions), the GraphiQL playground at /, the dashboard at /ui, /healthz, /readyz and\n" +
			"/metrics, and fails expired claims every --reaper-interval; with --webhook, POSTs signed alerts.\n" +
			"It finishes, when it starts and then in the background, the backfills of jobs with mappings\n" +
			"that a stopped server, or an apply that timed out, left half done.\n\n" +
			"Settings come from flags, then CHUNKLOCK_* environment variables, then the --config\n" +
			"YAML file (flag names as keys), then the defaults.\n\n" +
			"Without --tokens-file the server runs open (every request is an admin), which it allows\n" +
			"on a loopback address only.\n\n" +
			"Examples:\n" +
			"   chunklock serve\n" +
			"   chunklock serve --data-dir /var/lib/chunklock --retain-events 720h\n" +
			"   chunklock serve --store postgres://chunklock@db:5432/chunklock --listen 0.0.0.0:8080 \\\n" +
			"       --tokens-file tokens.yaml --webhook https://alerts.example/chunklock \\\n" +
			"       --webhook-secret-file webhook.secret",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Sources: env("LISTEN"), DefaultText: defaultListen + ", or a free port of 127.0.0.1 when that is taken",
				Usage: "`host:port` to serve on; an address given here that is taken is an error"},
			&cli.StringFlag{Name: "store", Sources: env("STORE"), DefaultText: "embedded etcd in --data-dir",
				Usage: "storage `URL`: empty for embedded etcd in --data-dir, postgres://user@host:5432/db[?schema=name] for PostgreSQL, etcd://host:2379[,host:port...][/prefix] (etcds:// with TLS) for an etcd cluster"},
			&cli.StringFlag{Name: "data-dir", Value: "./chunklock-data", Sources: env("DATA_DIR"),
				Usage: "`directory` of the embedded etcd store"},
			&cli.StringFlag{Name: "etcd-client-addr", Sources: env("ETCD_CLIENT_ADDR"), DefaultText: "the unix socket <data-dir>/etcd.sock",
				Usage: "loopback `host:port` the embedded etcd store serves its clients on (port 0 picks a free one), e.g. to reach it with etcdctl over TCP"},
			&cli.StringFlag{Name: "etcd-peer-addr", Sources: env("ETCD_PEER_ADDR"), DefaultText: "a free port of 127.0.0.1",
				Usage: "loopback `host:port` of the embedded etcd store's peer listener"},
			&cli.StringFlag{Name: "etcd-quota-backend-bytes", Sources: env("ETCD_QUOTA_BACKEND_BYTES"), DefaultText: "8GiB",
				Usage: "`size` (bytes, or with KiB, MiB, GiB, TiB) of the embedded etcd store's database past which it refuses every write (etcd's --quota-backend-bytes); " +
					"a chunk costs about 1.5 KB of it but about 6.5 KB of the server's memory, so memory runs out first (README: Outgrowing the embedded store). " +
					"Restarting with a larger size lifts a store out of NOSPACE"},
			&cli.StringFlag{Name: "keys", Sources: env("KEYS"), DefaultText: "age",
				Usage: "keyring `URL`: empty or age for per-job age keys, vault://host:8200?mount=transit&prefix=chunklock- for Vault transit (server token from VAULT_TOKEN)"},
			&cli.StringFlag{Name: "tokens-file", Sources: env("TOKENS_FILE"), DefaultText: "none (open, loopback only)",
				Usage: "YAML `file` of accepted API tokens, stored hashed (make entries with: chunklock token new)"},
			&cli.DurationFlag{Name: "reaper-interval", Value: d.ReaperInterval, Sources: env("REAPER_INTERVAL"),
				Usage: "how often claims whose lease passed are failed"},
			&cli.DurationFlag{Name: "retain-events", Sources: env("RETAIN_EVENTS"), DefaultText: "0: kept for ever",
				Usage: "how long events are kept (e.g. 720h for 30 days); older ones are pruned in the background, except those of a dataset with its own retention and those a --webhook has not delivered. Catalog changes are never pruned"},
			&cli.DurationFlag{Name: "prune-interval", Value: d.PruneInterval, Sources: env("PRUNE_INTERVAL"),
				Usage: "how often the event log is swept for events past their retention"},
			&cli.DurationFlag{Name: "request-timeout", Value: d.RequestTimeout, Sources: env("REQUEST_TIMEOUT"),
				Usage: "bound on each query and mutation (0: none)"},
			&cli.Int64Flag{Name: "max-body-bytes", Value: d.MaxBodyBytes, Sources: env("MAX_BODY_BYTES"),
				Usage: "largest request body accepted; larger ones get HTTP 413"},
			&cli.Int64Flag{Name: "max-complexity", Value: int64(d.MaxComplexity), Sources: env("MAX_COMPLEXITY"),
				Usage: "largest operation cost accepted, a unit being about 0.1 ms of server work (a field costs 1, findNext/claim/force 50, other mutations 10, pages their fields per 100 rows, a partitions page with a status or late filter 500 more, a partition summary 50, a range operation more than half of the limit: one per request)"},
			&cli.DurationFlag{Name: "summary-max-age", Value: d.SummaryMaxAge, Sources: env("SUMMARY_MAX_AGE"),
				Usage: "how long at most a dataset's partition summary (missing and late counts) is shared by the requests asking for it; a mutation through this server ends the sharing at once, this bounds it for changes made through other replicas"},
			&cli.Int64Flag{Name: "max-depth", Value: int64(d.MaxDepth), Sources: env("MAX_DEPTH"),
				Usage: "deepest selection nesting accepted"},
			&cli.Int64Flag{Name: "max-tokens", Value: int64(d.MaxTokens), Sources: env("MAX_TOKENS"),
				Usage: "longest query accepted, in tokens (names, punctuation, values; variables sent apart do not count); checked while parsing, before any other work"},
			&cli.Int64Flag{Name: "max-selections", Value: int64(d.MaxSelections), Sources: env("MAX_SELECTIONS"),
				Usage: "most selections (fields, fragment spreads, inline fragments) accepted in a query, each fragment counted in full wherever it is spread; checked before validation, whose work grows with their square"},
			&cli.Int64Flag{Name: "max-aliases", Value: int64(d.MaxAliases), Sources: env("MAX_ALIASES"),
				Usage: "most aliases accepted in a query, each fragment counted in full wherever it is spread"},
			&cli.BoolFlag{Name: "introspection", Value: d.Introspection, Sources: env("INTROSPECTION"), DefaultText: fmt.Sprint(d.Introspection),
				Usage: "serve the schema to clients (the playground needs it); --introspection=false also stops field-name suggestions"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: d.ShutdownTimeout, Sources: env("SHUTDOWN_TIMEOUT"),
				Usage: "how long SIGTERM/SIGINT waits for requests in flight"},
			&cli.StringSliceFlag{Name: "webhook", Sources: env("WEBHOOK"), DefaultText: "none",
				Usage: "`URL` to POST alerts to (a chunk put on HOLD, a claim failed or lost to lease expiry, a late chunk), signed with --webhook-secret; repeat for several (CHUNKLOCK_WEBHOOK: separated by commas; a comma inside a URL is %2C)"},
			&cli.StringFlag{Name: "webhook-secret", Sources: env("WEBHOOK_SECRET"), DefaultText: "none",
				Usage: "`secret` keying the HMAC-SHA256 signatures of every webhook delivery (Chunklock-Signature-V2 covers its timestamp too, against replays; prefer --webhook-secret-file or the environment to a flag, which other users may see)"},
			&cli.StringFlag{Name: "webhook-secret-file", Sources: env("WEBHOOK_SECRET_FILE"), DefaultText: "none",
				Usage: "`file` holding the webhook secret (a trailing newline is dropped)"},
			envAllowFlag("job env `NAME`s to accept although the rule on env names refuses them, such as TAR_OPTIONS (several: separated by commas); runners still refuse them unless given the same --env-allow"),
			&cli.StringFlag{Name: "log-level", Value: "info", Sources: env("LOG_LEVEL"),
				Usage: "`level` of the log on stderr: debug, info, warn or error"},
			&cli.StringFlag{Name: "config", Sources: env("CONFIG"), DefaultText: "none",
				Usage: "YAML `file` of settings, keyed by flag name, below flags and environment"},
		},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			return ctx, applyConfigFile(cmd)
		},
		Action: serve,
	}
}

// serve runs the server until SIGINT or SIGTERM.
func serve(ctx context.Context, cmd *cli.Command) error {
	stderr := cmd.Root().ErrWriter
	var level slog.Level
	if err := level.UnmarshalText([]byte(cmd.String("log-level"))); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", cmd.String("log-level"))
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := serverConfig(cmd, log)
	if err != nil {
		return err
	}
	allow, err := envAllow(cmd)
	if err != nil {
		return err
	}

	ln, moved, err := listen(cmd.String("listen"))
	if err != nil {
		return err
	}
	defer ln.Close()
	if err := server.CheckListener(cfg.Tokens, ln.Addr()); err != nil {
		return err
	}

	secret, err := webhookSecret(cmd) // before the store: a bad setting leaves nothing behind
	if err != nil {
		return err
	}
	storeURL, dataDir := cmd.String("store"), cmd.String("data-dir")
	emb, err := embeddedConfig(cmd)
	if err != nil {
		return err
	}
	emb.Logger = log
	store, err := openStore(ctx, storeURL, open.Options{DataDir: dataDir, Embedded: emb, EnvAllow: allow})
	if err != nil {
		return explainStoreErr(err)
	}
	defer store.Close()
	cfg.Store = store
	if m := open.Embedded(store); m != nil {
		cfg.Space = func() server.StoreSpace { return server.StoreSpace(m.Space()) }
		cfg.SpaceWarning = func(sp server.StoreSpace) string { return embedded.Space(sp).Warning() }
	}
	if cfg.Alerts, err = webhooks(cmd, store, secret, log); err != nil {
		return err
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}

	if srv.Open() {
		announceOpen(stderr, ln.Addr())
	}
	base := "http://" + browsable(ln.Addr())
	fmt.Fprintf(stderr, "chunklock: store: %s\n", describeStore(storeURL, dataDir, store))
	fmt.Fprintf(stderr, "chunklock: keyring: %s\n", cfg.Keyring.Kind())
	if names := allow.Names(); len(names) > 0 {
		fmt.Fprintf(stderr, "chunklock: job env names allowed beyond the rule: %s (runners refuse them unless they are given them too: chunklock run --env-allow)\n", strings.Join(names, ","))
	}
	if storeURL == "" {
		path, err := writeServeURL(dataDir, base)
		if err != nil {
			return err
		}
		defer os.Remove(path)
		fmt.Fprintf(stderr, "chunklock: URL written to %s%s\n", path, serveURLNote(dataDir))
	}
	if moved {
		fmt.Fprintf(stderr, "chunklock: %s is taken (another chunklock?), so this server listens on %s instead; --listen sets the address\n", defaultListen, ln.Addr())
	}
	fmt.Fprintf(stderr, "chunklock: GraphQL at %s/graphql\n", base)
	fmt.Fprintf(stderr, "chunklock: playground at %s/\n", base)
	fmt.Fprintf(stderr, "chunklock: dashboard at %s/ui\n", base)
	for _, u := range cmd.StringSlice("webhook") {
		fmt.Fprintf(stderr, "chunklock: alerts to webhook %s\n", webhook.Redact(u))
	}
	if r := cmd.Duration("retain-events"); r > 0 {
		fmt.Fprintf(stderr, "chunklock: events kept %s (datasets with their own retention keep theirs), pruned every %s\n", r, cmd.Duration("prune-interval"))
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// serverConfig is the server.Config of serve's flags, but for the store
// and the alerts.
func serverConfig(cmd *cli.Command, log *slog.Logger) (server.Config, error) {
	cfg := server.DefaultConfig()
	cfg.Logger = log
	cfg.Introspection = cmd.Bool("introspection")
	cfg.MaxBodyBytes = cmd.Int64("max-body-bytes")
	cfg.RequestTimeout = cmd.Duration("request-timeout")
	cfg.MaxComplexity = int(cmd.Int64("max-complexity"))
	cfg.SummaryMaxAge = cmd.Duration("summary-max-age")
	cfg.MaxDepth = int(cmd.Int64("max-depth"))
	cfg.MaxTokens = int(cmd.Int64("max-tokens"))
	cfg.MaxSelections = int(cmd.Int64("max-selections"))
	cfg.MaxAliases = int(cmd.Int64("max-aliases"))
	cfg.ReaperInterval = cmd.Duration("reaper-interval")
	cfg.RetainEvents = cmd.Duration("retain-events")
	cfg.PruneInterval = cmd.Duration("prune-interval")
	cfg.ShutdownTimeout = cmd.Duration("shutdown-timeout")
	if path := cmd.String("tokens-file"); path != "" {
		tokens, err := auth.LoadTokens(path)
		if err != nil {
			return server.Config{}, err
		}
		if tokens.Len() == 0 {
			return server.Config{}, fmt.Errorf("tokens file %s has no tokens; add one with `chunklock token new`, or leave --tokens-file out to run open on a loopback address", path)
		}
		cfg.Tokens = tokens
	}
	kr, err := keyring.Open(cmd.String("keys"))
	if err != nil {
		return server.Config{}, err
	}
	cfg.Keyring = kr
	return cfg, nil
}

// defaultListen is where serve listens when --listen is not given.
var defaultListen = "127.0.0.1:8080"

// listen opens the HTTP listener on addr; with no addr, on defaultListen
// or, when that is taken, on a free port of the same host (moved).
func listen(addr string) (ln net.Listener, moved bool, err error) {
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, false, fmt.Errorf("--listen %s is taken (another chunklock or program listens there): choose another address, or leave --listen out to take a free port: %w", addr, err)
		}
		if err != nil {
			return nil, false, fmt.Errorf("--listen %s: %w", addr, err)
		}
		return ln, false, nil
	}
	ln, err = net.Listen("tcp", defaultListen)
	if !errors.Is(err, syscall.EADDRINUSE) {
		if err != nil {
			return nil, false, fmt.Errorf("listening on %s: %w", defaultListen, err)
		}
		return ln, false, nil
	}
	host, _, _ := net.SplitHostPort(defaultListen)
	ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, false, fmt.Errorf("%s is taken, and no free port of %s: %w", defaultListen, host, err)
	}
	return ln, true, nil
}

// embeddedConfig reads the embedded store's addresses; only loopback
// addresses are accepted.
func embeddedConfig(cmd *cli.Command) (embedded.Config, error) {
	cfg := embedded.Config{ClientAddr: cmd.String("etcd-client-addr"), PeerAddr: cmd.String("etcd-peer-addr")}
	if q := cmd.String("etcd-quota-backend-bytes"); q != "" {
		if cmd.String("store") != "" {
			return cfg, errors.New("--etcd-quota-backend-bytes applies to the embedded store only: an etcd cluster's quota is its members' --quota-backend-bytes")
		}
		n, err := parseBytes(q)
		if err != nil {
			return cfg, fmt.Errorf("--etcd-quota-backend-bytes: %w", err)
		}
		cfg.QuotaBackendBytes = n
	}
	if cmd.String("store") != "" {
		return cfg, nil
	}
	for _, a := range []string{cfg.ClientAddr, cfg.PeerAddr} {
		if a == "" {
			continue
		}
		if err := loopbackAddr(a); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// byteUnits are the suffixes parseBytes takes.
var byteUnits = []struct {
	suffix string
	n      int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}, {"", 1}}

// parseBytes reads a size: a number of bytes, or one with a binary unit
// (KiB, MiB, GiB, TiB), at least 1 MiB.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	for _, u := range byteUnits {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n <= 0 || n > math.MaxInt64/u.n {
			break
		}
		if n*u.n < 1<<20 {
			return 0, fmt.Errorf("%q is below 1 MiB", s)
		}
		return n * u.n, nil
	}
	return 0, fmt.Errorf("%q is not a size: give bytes (8589934592) or a whole number of KiB, MiB, GiB or TiB (8GiB)", s)
}

// explainStoreErr names the flag of an embedded-store address that cannot
// be listened on.
func explainStoreErr(err error) error {
	var ae *embedded.AddrError
	if errors.As(err, &ae) {
		return fmt.Errorf("--etcd-%s-addr: %w", ae.Role, err)
	}
	return err
}

// announceOpen warns, loudly, that the server accepts anyone.
func announceOpen(w io.Writer, addr net.Addr) {
	line := strings.Repeat("!", 78)
	fmt.Fprintf(w, "%s\n"+
		"!! chunklock runs OPEN: no --tokens-file, so every request on %s is an\n"+
		"!! admin named \"anonymous\". Anyone who can reach this address can change\n"+
		"!! everything. Allowed on a loopback address only; give --tokens-file to\n"+
		"!! require tokens (make them with `chunklock token new`).\n"+
		"%s\n", line, addr, line)
}

// browsable returns host:port of a listener as a browser can reach it: the
// unspecified address becomes localhost.
func browsable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("localhost", fmt.Sprint(tcp.Port))
}

// webhooks builds the webhook dispatcher from --webhook and its secret;
// nil when no webhook is given.
func webhooks(cmd *cli.Command, store backends.Store, secret string, log *slog.Logger) (*webhook.Dispatcher, error) {
	urls := cmd.StringSlice("webhook")
	if len(urls) == 0 {
		return nil, nil
	}
	cfg := webhook.DefaultConfig()
	cfg.Store, cfg.URLs, cfg.Secret, cfg.Logger = store, urls, []byte(secret), log
	return webhook.New(cfg)
}

// webhookSecret is the secret of --webhook-secret or --webhook-secret-file
// ("" without --webhook); serve reads it before it opens the store, so
// that a wrong setting changes nothing on disk.
func webhookSecret(cmd *cli.Command) (string, error) {
	secret, file := cmd.String("webhook-secret"), cmd.String("webhook-secret-file")
	if len(cmd.StringSlice("webhook")) == 0 {
		return "", nil
	}
	switch {
	case secret != "" && file != "":
		return "", errors.New("give the webhook secret once: --webhook-secret or --webhook-secret-file, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--webhook-secret-file: %w", err)
		}
		secret = strings.TrimRight(string(b), "\r\n")
		if secret == "" {
			return "", fmt.Errorf("--webhook-secret-file %s is empty", file)
		}
	case secret == "":
		return "", errors.New("--webhook needs a secret to sign its alerts: give --webhook-secret-file (or CHUNKLOCK_WEBHOOK_SECRET)")
	}
	return secret, nil
}
