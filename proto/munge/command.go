package munge

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds one run of munge or unmunge: munged answers in
// milliseconds, so a run this long means it is stuck.
const DefaultTimeout = 10 * time.Second

// Command runs MUNGE's programs, munge and unmunge, found on PATH. The
// zero value talks to munged's default socket.
type Command struct {
	// Socket is munged's socket (the programs' -S option); "" for their
	// default, /run/munge/munge.socket.2 on Debian.
	Socket string
	// Timeout bounds each run; zero means DefaultTimeout.
	Timeout time.Duration
}

// Credential is what unmunge found in a valid credential.
type Credential struct {
	UID, GID uint32 // of the process that made it
	Payload  []byte
}

// MUNGE's error codes (munge_err_t), which are the exit codes of munge and
// unmunge: from badLength, and from badCred on, the credential is at fault;
// below, munged or the machine (no daemon, a timeout, no memory).
const (
	codeBadLength = 3
	codeBadCred   = 8
)

// Encode runs munge on payload and returns the credential.
func (c Command) Encode(ctx context.Context, payload []byte) (string, error) {
	out, code, err := c.run(ctx, "munge", payload)
	if err != nil {
		return "", fmt.Errorf("%w: munge (exit code %d): %w", ErrUnavailable, code, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Decode runs unmunge on credential and returns what it holds. A credential
// unmunge refuses is ErrCredential, with unmunge's reason ("Replayed
// credential", "Expired credential"); unmunge failing to run, or munged
// failing to answer, is ErrUnavailable.
func (c Command) Decode(ctx context.Context, credential string) (Credential, error) {
	out, code, err := c.run(ctx, "unmunge", []byte(credential), "--keys=status,uid,gid")
	decoded, status, perr := parseUnmunge(out)
	switch {
	case err == nil && perr == nil && status == "":
		return decoded, nil
	case err == nil && perr != nil:
		return Credential{}, fmt.Errorf("%w: unmunge: %w", ErrUnavailable, perr)
	case err == nil || code == codeBadLength || code >= codeBadCred:
		// unmunge prints the metadata of an expired, rewound or replayed
		// credential, with its status; for others, only a message.
		if status != "" {
			err = errors.New(status)
		}
		return Credential{}, fmt.Errorf("%w: %w", ErrCredential, err)
	}
	return Credential{}, fmt.Errorf("%w: unmunge (exit code %d): %w", ErrUnavailable, code, err)
}

// run runs program with stdin, the socket option and args, and returns its
// standard output. A failure's error has the program's message; code is
// its exit code (-1 when it did not exit).
func (c Command) run(ctx context.Context, program string, stdin []byte, args ...string) (stdout []byte, code int, err error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(c.Timeout, DefaultTimeout))
	defer cancel()
	if c.Socket != "" {
		args = append(args, "--socket="+c.Socket)
	}
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	switch {
	case err == nil:
		return out.Bytes(), 0, nil
	case ctx.Err() != nil:
		return out.Bytes(), -1, fmt.Errorf("no answer within %s (is munged stuck?)", cmp.Or(c.Timeout, DefaultTimeout))
	}
	code = -1
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exit.ExitCode()
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		// "unmunge: Error: Invalid credential": the program's own words.
		if _, words, ok := strings.Cut(msg, "Error: "); ok {
			msg = words
		}
		err = errors.New(msg)
	}
	return out.Bytes(), code, err
}

// parseUnmunge reads unmunge's output for --keys=status,uid,gid: lines
// "KEY: value", where STATUS, UID and GID end in their number in
// parentheses ("Success (0)", "nobody (65534)"), then an empty line, then
// the payload as it is. failed is the STATUS text when it is not success
// ("Replayed credential").
func parseUnmunge(out []byte) (c Credential, failed string, err error) {
	head, payload, ok := bytes.Cut(out, []byte("\n\n"))
	if !ok {
		return Credential{}, "", fmt.Errorf("no empty line after the metadata in %.200q", out)
	}
	meta := map[string]uint32{}
	for line := range strings.SplitSeq(string(head), "\n") {
		key, value, ok := strings.Cut(line, ":")
		text, n, err := numbered(strings.TrimSpace(value))
		if !ok || err != nil {
			return Credential{}, "", fmt.Errorf("line %.200q is not KEY: NAME (NUMBER)", line)
		}
		if _, dup := meta[key]; dup {
			return Credential{}, "", fmt.Errorf("%.20s twice", key)
		}
		meta[key] = n
		if key == "STATUS" && n != 0 {
			failed = text + " (" + strconv.FormatUint(uint64(n), 10) + ")"
		}
	}
	for _, key := range []string{"STATUS", "UID", "GID"} {
		if _, ok := meta[key]; !ok {
			return Credential{}, "", fmt.Errorf("no %s in %.200q", key, head)
		}
	}
	return Credential{UID: meta["UID"], GID: meta["GID"], Payload: payload}, failed, nil
}

// numbered splits "text (123)" into its text and number.
func numbered(value string) (string, uint32, error) {
	open := strings.LastIndexByte(value, '(')
	if open < 0 || !strings.HasSuffix(value, ")") {
		return "", 0, fmt.Errorf("%q does not end in a number in parentheses", value)
	}
	n, err := strconv.ParseUint(value[open+1:len(value)-1], 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("%q: %w", value, err)
	}
	return strings.TrimSpace(value[:open]), uint32(n), nil
}
