// Command chunklock is the chunklock server and its tools. Each subcommand
// lives in its own file; this file is the command table.
//
//	chunklock serve        run the GraphQL server
//	chunklock token new    make an API token and its tokens-file entry
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"
)

func main() {
	os.Exit(run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// app returns the command table.
func app(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "chunklock",
		Usage:     "coordinate partitioned batch pipelines: chunk status, locks and claims over GraphQL",
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: append([]*cli.Command{
			serveCommand(),
			tokenCommand(),
			keysCommand(),
		}, clientCommands()...),
	}
}

// run runs the command line args and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if err := app(stdout, stderr).Run(ctx, args); err != nil {
		fmt.Fprintln(stderr, "chunklock:", err)
		return 1
	}
	return 0
}
