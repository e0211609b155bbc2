package main

// The client side of the chunklock command: everything but serve and token
// talks to a server over GraphQL only, so whatever it does can also be done
// with curl. This file holds what those commands share: the connection
// flags, the client, error explanations and exit codes.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/client"
)

// clientCommands returns the commands that talk to a server.
func clientCommands() []*cli.Command {
	return []*cli.Command{
		applyCommand(),
		nextCommand(),
		runCommand(),
		completeCommand(),
		failCommand(),
		heartbeatCommand(),
		releaseCommand(),
		statusCommand(),
		chunksCommand(),
		graphCommand(),
		eventsCommand(),
		publishCommand(),
		resubmitCommand(),
		holdCommand(),
		forceCommand(),
		blockersCommand(),
		poolsCommand(),
		partitionsCommand(),
		deleteCommand(),
		pauseCommand(false),
		pauseCommand(true),
		historyCommand(),
		lockCommand(),
		unlockCommand(),
		renewCommand(),
	}
}

// Exit codes of the client commands.
const (
	exitOK      = 0
	exitError   = 1
	exitNothing = 3 // next, run: nothing to claim
)

// Categories group the commands in `chunklock --help`.
const (
	catRunner   = "runner"
	catOperator = "operator"
	catPipeline = "pipeline"
	catView     = "views"
)

// connFlags are the flags every client command takes.
func connFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "url", Sources: cli.EnvVars("CHUNKLOCK_URL"),
			DefaultText: "the URL in ./chunklock-data/serve.url when only you could have written it, else http://127.0.0.1:8080 when your own process listens there",
			Usage:       "`URL` of the chunklock server (the bearer token comes from CHUNKLOCK_TOKEN)"},
	}
}

// jobKeyFlags are the flags of commands that receive claims.
func jobKeyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "job-key-file", TakesFile: true,
			Usage: "`file` holding the job key (as printed by apply); default CHUNKLOCK_JOB_KEY. With the key, claims carry the datasets' decrypted secrets"},
		&cli.StringFlag{Name: "keys-dir", TakesFile: true,
			Usage: "`directory` of job keys named <job>.key, as written by apply --keys-dir (for several jobs)"},
	}
}

// envAllowFlag is the operator's list of job env names to admit although
// the rule on env names (package envname) refuses them. serve, run, next,
// apply and status take it, each from its own flag or CHUNKLOCK_ENV_ALLOW:
// a runner never learns it from the server.
func envAllowFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{Name: "env-allow", Sources: cli.EnvVars("CHUNKLOCK_ENV_ALLOW"), DefaultText: "none", Usage: usage}
}

// envAllow is the allowlist of the command's --env-allow.
func envAllow(cmd *cli.Command) (envname.Allow, error) {
	return envname.ParseAllow(cmd.StringSlice("env-allow"))
}

// connHelp is appended to every client command's description.
const connHelp = "\n\nConnection: --url or CHUNKLOCK_URL. Without them, the URL a server on ./chunklock-data wrote\n" +
	"to ./chunklock-data/serve.url, used only when nobody else could have written it (you own\n" +
	"the current directory, the data directory and the file, none of them may be written by\n" +
	"group or others, and none is a symbolic link: else the command says which check failed and\n" +
	"stops); with no such file, http://127.0.0.1:8080 when the process listening there is your\n" +
	"own (checked on Linux; elsewhere give --url). The bearer token comes from CHUNKLOCK_TOKEN\n" +
	"(not needed by a server running open on a loopback address)."

// newClient builds the API client from the connection flags and the
// environment, sending jobKey (if any) with every request.
func newClient(cmd *cli.Command, jobKey string) (*client.Client, error) {
	opts := []client.Option{client.WithToken(os.Getenv("CHUNKLOCK_TOKEN"))}
	if jobKey != "" {
		opts = append(opts, client.WithJobKey(jobKey))
	}
	url, err := serverURL(cmd)
	if err != nil {
		return nil, err
	}
	c, err := client.New(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w; set --url or CHUNKLOCK_URL", err)
	}
	return c, nil
}

// jobKeyFor finds the key of job: --job-key-file, else <job>.key in
// --keys-dir, else CHUNKLOCK_JOB_KEY; "" when there is none. A single key
// (file or variable) cannot serve several jobs: the server refuses a key
// that is not the claim's job's.
func jobKeyFor(cmd *cli.Command, job string, several bool) (string, error) {
	read := func(path, what string) (string, error) {
		raw, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		key := strings.TrimSpace(string(raw))
		if key == "" {
			return "", fmt.Errorf("%s %s is empty; it should hold the job key printed by `chunklock apply`", what, path)
		}
		return key, nil
	}
	if path := cmd.String("job-key-file"); path != "" {
		if several {
			return "", errors.New("--job-key-file holds one job's key; with several --job use --keys-dir DIR (DIR/<job>.key)")
		}
		return read(path, "--job-key-file")
	}
	if dir := cmd.String("keys-dir"); dir != "" {
		path := filepath.Join(dir, job+".key")
		if _, err := os.Stat(path); err != nil {
			if os.IsNotExist(err) {
				return "", nil
			}
			return "", fmt.Errorf("--keys-dir: %w", err)
		}
		return read(path, "--keys-dir")
	}
	if key := strings.TrimSpace(os.Getenv("CHUNKLOCK_JOB_KEY")); key != "" {
		if several {
			return "", errors.New("CHUNKLOCK_JOB_KEY holds one job's key; with several --job unset it and use --keys-dir DIR (DIR/<job>.key)")
		}
		return key, nil
	}
	return "", nil
}

// explain turns an error from the server into a message that says what
// went wrong and what to do.
func explain(cmd *cli.Command, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted")
	}
	if errors.Is(err, client.ErrNotGraphQL) {
		return fmt.Errorf("%w\n(the URL %s came from %s; set --url or CHUNKLOCK_URL to the server's, which `chunklock serve` prints and writes to chunklock-data/serve.url in its directory)", err, cmd.String("url"), urlFrom(cmd))
	}
	var ce *client.Error
	if !errors.As(err, &ce) {
		return err
	}
	url := cmd.String("url")
	switch ce.Code {
	case backends.CodeUnavailable:
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("%s: connection refused. Is `chunklock serve` running at %s? Set --url or CHUNKLOCK_URL%s", url, url, staleServeURL(url))
		}
		if ce.Err != nil {
			return fmt.Errorf("%s (is `chunklock serve` running at %s? set --url or CHUNKLOCK_URL)", ce.Message, url)
		}
		return fmt.Errorf("%s (the server or its store is unavailable; retry later)", ce.Message)
	case backends.CodeUnauthenticated:
		if os.Getenv("CHUNKLOCK_TOKEN") == "" {
			return fmt.Errorf("%s: the server at %s requires a token; set CHUNKLOCK_TOKEN (make one with `chunklock token new` on the server)", ce.Code, url)
		}
		return fmt.Errorf("%s: the server at %s does not accept the token in CHUNKLOCK_TOKEN; check it against the server's tokens file", ce.Code, url)
	case backends.CodeLocked:
		if len(ce.Blockers) > 0 {
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %s; blocked by:", ce.Code, ce.Message)
			for _, bl := range ce.Blockers {
				cb := client.Blocker{Dataset: bl.Dataset, DataID: bl.DataID, Job: bl.Job, Kind: string(bl.Kind), Status: statusOrNone(string(bl.Status))}
				if !bl.Until.IsZero() {
					cb.Until = &bl.Until
				}
				if bl.Pool != "" {
					cb.Pool = &bl.Pool
				}
				fmt.Fprintf(&b, "\n  %s", describeBlocker(cb))
			}
			return errors.New(b.String())
		}
		if len(ce.Holders) > 0 {
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %s; held by:", ce.Code, ce.Message)
			for _, h := range ce.Holders {
				fmt.Fprintf(&b, "\n  %s %s lock %s by %s until %s", h.Resource, h.Mode, h.ID, h.Client, h.ExpiresAt.Local().Format(time.RFC3339))
			}
			return errors.New(b.String())
		}
	}
	return err
}

func statusOrNone(s string) string {
	if s == "" {
		return "NONE"
	}
	return s
}

// action wraps a command's action: it builds the client and explains
// errors. A returned cli.ExitCoder passes through with its code.
func action(f func(ctx context.Context, cmd *cli.Command, c *client.Client) error) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		c, err := newClient(cmd, "")
		if err != nil {
			return err
		}
		err = f(ctx, cmd, c)
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			return err
		}
		return explain(cmd, err)
	}
}

// exitWith prints msg (if any) to the command's stderr and exits with code.
func exitWith(cmd *cli.Command, code int, format string, args ...any) error {
	if format != "" {
		fmt.Fprintf(cmd.Root().ErrWriter, format+"\n", args...)
	}
	return exitStatus(code)
}

func stdout(cmd *cli.Command) io.Writer { return cmd.Root().Writer }
func stderr(cmd *cli.Command) io.Writer { return cmd.Root().ErrWriter }

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// defaultExecutor names this process for operators: host-pid-random.
func defaultExecutor() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
