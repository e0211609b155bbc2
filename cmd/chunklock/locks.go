package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
)

func lockCommand() *cli.Command {
	return &cli.Command{
		Name:     "lock",
		Category: catOperator,
		Usage:    "take a named READ or WRITE lock on a resource URI, or list the resource locks",
		UsageText: "chunklock lock --client C --resource URI [--mode read|write] [--ttl D]\n" +
			"chunklock lock --list [--resource URI] [--client C]",
		Description: "Resource locks are soft locks on anything named by a URI (a table, a bucket, a\n" +
			"maintenance window), independent of chunks. Any number of READ locks may coexist; a\n" +
			"WRITE lock only when no other lock exists. It never waits: when refused it exits 3\n" +
			"and lists the holders. Every lock expires (--ttl). Prints the lock id for unlock.\n\n" +
			"Exit status: 0 locked; 3 refused (held by others); 1 error.\n\n" +
			"Example:\n" +
			"   id=$(chunklock lock --client \"$USER\" --resource postgres://dwh/sales --mode write --ttl 30m)\n" +
			"   ... maintenance ...\n" +
			"   chunklock unlock --id \"$id\" --client \"$USER\"" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "client", Usage: "who holds the lock (a process or a person; `name`); with a runner token, the token's name or <token name>/<anything>"},
			&cli.StringFlag{Name: "resource", Usage: "the resource `URI`"},
			&cli.StringFlag{Name: "mode", Value: "write", Usage: "`read` (shared) or write (exclusive)"},
			&cli.DurationFlag{Name: "ttl", Usage: "lifetime of the lock (default: the server's, 1h)"},
			&cli.BoolFlag{Name: "list", Usage: "list the unexpired resource locks instead (filtered by --resource, --client)"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			mode := strings.ToUpper(cmd.String("mode"))
			if mode != "READ" && mode != "WRITE" {
				return fmt.Errorf("--mode %q: want read or write", cmd.String("mode"))
			}
			if cmd.Bool("list") {
				m := ""
				if cmd.IsSet("mode") {
					m = mode
				}
				locks, err := c.ResourceLocks(ctx, cmd.String("resource"), cmd.String("client"), m)
				if err != nil {
					return err
				}
				return printLocks(cmd, locks)
			}
			if cmd.String("client") == "" || cmd.String("resource") == "" {
				return errors.New("give --client and --resource (or --list to see the locks)")
			}
			l, err := c.LockResource(ctx, cmd.String("client"), cmd.String("resource"), mode, cmd.Duration("ttl"))
			if err != nil {
				if client.CodeOf(err) == backends.CodeLocked {
					return exitWith(cmd, exitNothing, "%v", explain(cmd, err))
				}
				return err
			}
			fmt.Fprintln(stdout(cmd), l.ID)
			fmt.Fprintf(stderr(cmd), "%s lock on %s for %s until %s\n", l.Mode, l.Resource, l.Client, l.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		}),
	}
}

func printLocks(cmd *cli.Command, locks []client.ResourceLock) error {
	if len(locks) == 0 {
		fmt.Fprintln(stdout(cmd), "no resource locks")
		return nil
	}
	tw := tabwriter.NewWriter(stdout(cmd), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRESOURCE\tMODE\tCLIENT\tEXPIRES")
	for _, l := range locks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.ID, l.Resource, l.Mode, l.Client, l.ExpiresAt.Local().Format(time.RFC3339))
	}
	return tw.Flush()
}

func renewCommand() *cli.Command {
	return &cli.Command{
		Name:      "renew",
		Category:  catOperator,
		Usage:     "extend a resource lock (only the client holding it may)",
		UsageText: "chunklock renew --id ID --client C [--ttl D]",
		Description: "Extends the lock `chunklock lock` printed the id of to --ttl from now (at most 7\n" +
			"days). FORBIDDEN when --client is not the lock's holder; NOT_FOUND once it expired or\n" +
			"was unlocked: take it again then.\n\n" +
			"Example (keep a lock while a long maintenance runs):\n" +
			"   while sleep 600; do chunklock renew --id \"$id\" --client \"$USER\" --ttl 30m || break; done" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "id", Required: true, Usage: "the lock `id`"},
			&cli.StringFlag{Name: "client", Required: true, Usage: "the `name` the lock was taken for"},
			&cli.DurationFlag{Name: "ttl", Usage: "new lifetime from now (default: the server's, 1h)"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			l, err := c.RenewResource(ctx, cmd.String("id"), cmd.String("client"), cmd.Duration("ttl"))
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr(cmd), "%s lock on %s for %s until %s\n", l.Mode, l.Resource, l.Client, l.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		}),
	}
}

func unlockCommand() *cli.Command {
	return &cli.Command{
		Name:      "unlock",
		Category:  catOperator,
		Usage:     "remove a resource lock (only the client holding it may)",
		UsageText: "chunklock unlock --id ID --client C",
		Description: "Removes the lock `chunklock lock` printed the id of. FORBIDDEN when --client is not\n" +
			"the lock's holder.\n\n" +
			"Example:\n" +
			"   chunklock unlock --id \"$id\" --client \"$USER\"" + connHelp,
		Flags: append(connFlags(),
			&cli.StringFlag{Name: "id", Required: true, Usage: "the lock `id`"},
			&cli.StringFlag{Name: "client", Required: true, Usage: "the `name` the lock was taken for"},
		),
		Action: action(func(ctx context.Context, cmd *cli.Command, c *client.Client) error {
			return c.UnlockResource(ctx, cmd.String("id"), cmd.String("client"))
		}),
	}
}
