// Command chunklock is the chunklock server and its tools. Each subcommand
// lives in its own file; this file is the command table.
//
//	chunklock serve        run the GraphQL server
//	chunklock token new    make an API token and its tokens-file entry
package main

import (
	"context"
	"errors"
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
	root := &cli.Command{
		Name:      "chunklock",
		Usage:     "coordinate partitioned batch pipelines: chunk status, locks and claims over GraphQL",
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: append([]*cli.Command{
			serveCommand(),
			tokenCommand(),
			keysCommand(),
			storeCommand(),
		}, clientCommands()...),
		// Errors, exit statuses included, go back to run: the library
		// must not exit the process itself.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
	}
	checkUsage(root)
	return root
}

// run runs the command line args and returns the process exit code: that
// of an exitStatus, else 1 for an error, which it prints.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := app(stdout, stderr).Run(ctx, args)
	var status exitStatus
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &status):
		return int(status)
	}
	fmt.Fprintln(stderr, "chunklock:", err)
	return exitError
}

// exitStatus ends a command with that exit status; whatever it had to say
// has been printed already.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }
func (s exitStatus) ExitCode() int { return int(s) }
