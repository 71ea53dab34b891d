package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// Destructive commands ask for confirmation on a terminal: those that stop
// work at once (deactivating an account, project, user or machine), that
// cannot be undone (revoking a key), or that delete what later jobs are
// priced or charged by (rate delete, rate window delete, rate set, policy
// set|fallback none). The README's command list says why each asks, and
// why the others (withdraw, transfer: undone by the reverse move) do not.

// errNotConfirmed is the refusal of a destructive command that the
// operator did not confirm.
var errNotConfirmed = errors.New("not confirmed")

// console is where a destructive command asks: the input it reads the
// answer from, and whether a person types on it. Tests replace it.
var console = func() (io.Reader, bool) { return os.Stdin, stdinIsTerminal() }

// stdinIsTerminal reports whether standard input is a terminal: a
// character device other than /dev/null, which is one too, and is what
// cron, systemd and go test give a command. (golang.org/x/term would ask
// the terminal itself, but is not a dependency of ingot.)
func stdinIsTerminal() bool {
	info, err := os.Stdin.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(info, null)
}

// yesFlag is --yes, which a destructive command takes to do it unasked.
func yesFlag() cli.Flag {
	return &cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do it without asking (ingot asks only when standard input is a terminal)"}
}

// confirm asks question, followed by [y/N], on a terminal and goes on
// only if the answer is y or yes. With --yes, or when standard input is
// not a terminal (a script, cron), it asks nothing: a script says what it
// means on its command line.
func confirm(c *cli.Context, question string) error {
	in, terminal := console()
	if c.Bool("yes") || !terminal {
		return nil
	}
	fmt.Fprintf(c.App.ErrWriter, "%s [y/N] ", question)
	// An answer cut short by the end of input still counts; an error
	// reading it is no answer.
	answer, _ := bufio.NewReader(in).ReadString('\n')
	if !strings.HasSuffix(answer, "\n") {
		fmt.Fprintln(c.App.ErrWriter) // what follows starts a line of its own
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("%s: %w: nothing changed (answer y to go ahead, or pass --yes)", commandPath(c), errNotConfirmed)
}
