package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/slurm"
)

// The submit server answers job_submit.lua over a Unix socket, so that the
// controller starts no process per submission (docs/slurm.md, "The
// submit path"): the script sends one line, the job's fields as
// tab-separated NAME=VALUE (the names of `ingot slurm submit`'s flags), and
// reads one line back, the verdict `ingot slurm submit` would print. The
// server keeps its connection to the bank and the bank's node names, so a
// verdict costs one quote.

// submitLineTimeout bounds how long a connection may take to send its
// line (slurmctld sends it at once), and how long a verdict may take.
const submitLineTimeout = 10 * time.Second

func slurmSubmitServer(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	path := c.String("socket")
	if path == "" {
		return usageError{"slurm submit-server needs --socket PATH (setup's --submit-socket)"}
	}
	machine := c.String("machine")
	if machine == "" {
		return usageError{"slurm submit-server needs --machine: the bank's machine for this cluster"}
	}
	// A socket left by a server that died is replaced; any other file is not.
	if info, err := os.Lstat(path); err == nil {
		if info.Mode().Type() != fs.ModeSocket {
			return fmt.Errorf("slurm submit-server: %s exists and is not a socket", path)
		}
		if conn, err := net.Dial("unix", path); err == nil {
			conn.Close()
			return fmt.Errorf("slurm submit-server: a server already answers on %s", path)
		}
		os.Remove(path)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("slurm submit-server: %w", err)
	}
	defer os.Remove(path)
	// Only the server's user (SlurmUser, which slurmctld runs as) may ask.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("slurm submit-server: %w", err)
	}
	go func() {
		<-c.Context.Done()
		l.Close()
	}()
	fmt.Fprintf(c.App.ErrWriter, "ingot slurm submit-server: answering job_submit.lua on %s for machine %s\n", path, machine)
	return withBank(c, func(b bank) error {
		sb := newSubmitter(b, machine)
		for {
			conn, err := l.Accept()
			if err != nil {
				if c.Context.Err() != nil {
					return nil
				}
				return fmt.Errorf("slurm submit-server: %w", err)
			}
			go serveSubmit(c.Context, sb, conn, c.App.ErrWriter)
		}
	})
}

// serveSubmit answers each line conn sends until it closes.
func serveSubmit(ctx context.Context, sb *slurm.Submitter, conn net.Conn, log io.Writer) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		conn.SetReadDeadline(time.Now().Add(submitLineTimeout))
		line, err := r.ReadString('\n')
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && line != "" {
				fmt.Fprintf(log, "ingot slurm submit-server: %v\n", err)
			}
			return
		}
		// job_submit.lua has given up by then; a bank that hangs must not
		// pile up a goroutine a job.
		lineCtx, cancel := context.WithTimeout(ctx, submitLineTimeout)
		verdict := sb.LineVerdict(lineCtx, strings.TrimRight(line, "\r\n"))
		cancel()
		if strings.HasPrefix(verdict, "error ") {
			fmt.Fprintf(log, "ingot slurm submit-server: %s\n", verdict)
		}
		if _, err := fmt.Fprintln(conn, strings.NewReplacer("\n", " ", "\r", " ").Replace(verdict)); err != nil {
			return
		}
	}
}
