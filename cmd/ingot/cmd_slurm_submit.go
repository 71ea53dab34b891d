package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
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
// line: slurmctld sends it at once.
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
		sb := &submitter{b: b, machine: machine}
		for {
			conn, err := l.Accept()
			if err != nil {
				if c.Context.Err() != nil {
					return nil
				}
				return fmt.Errorf("slurm submit-server: %w", err)
			}
			go sb.serve(c.Context, conn, c.App.ErrWriter)
		}
	})
}

// serve answers each line conn sends until it closes.
func (sb *submitter) serve(ctx context.Context, conn net.Conn, log interface{ Write([]byte) (int, error) }) {
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
		verdict := sb.lineVerdict(ctx, strings.TrimRight(line, "\r\n"))
		if strings.HasPrefix(verdict, "error ") {
			fmt.Fprintf(log, "ingot slurm submit-server: %s\n", verdict)
		}
		if _, err := fmt.Fprintln(conn, strings.NewReplacer("\n", " ", "\r", " ").Replace(verdict)); err != nil {
			return
		}
	}
}

// lineVerdict is the verdict on one line of the protocol.
func (sb *submitter) lineVerdict(ctx context.Context, line string) string {
	s, uid, userName, err := parseSubmitLine(line)
	if err != nil {
		return "error " + err.Error()
	}
	if userName == "" {
		if userName, err = sb.user(uid); err != nil {
			return "error " + err.Error()
		}
	}
	return sb.verdict(ctx, s, userName)
}

// parseSubmitLine reads NAME=VALUE fields separated by tabs: uid or user,
// and the fields of submissionFields by their flags' names.
func parseSubmitLine(line string) (s slurm.Submission, uid, userName string, err error) {
	for _, f := range strings.Split(line, "\t") {
		if f == "" {
			continue
		}
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return s, "", "", fmt.Errorf("slurm submit-server: field %q is not NAME=VALUE", truncate(f, 40))
		}
		switch name {
		case "uid":
			uid = value
			continue
		case "user":
			userName = value
			continue
		}
		i := slices.IndexFunc(submissionFields, func(sf submissionField) bool { return sf.flag == name })
		if i < 0 {
			return s, "", "", fmt.Errorf("slurm submit-server: unknown field %q (job_submit.lua of another ingot?)", truncate(name, 40))
		}
		*submissionFields[i].field(&s) = value
	}
	if uid == "" && userName == "" {
		return s, "", "", fmt.Errorf("slurm submit-server: the line names no uid or user")
	}
	return s, uid, userName, nil
}
