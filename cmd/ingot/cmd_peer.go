package main

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/peer"
)

func peerCommands() []*cli.Command {
	serverKey := serverKeyFlag()
	whenAway := &cli.StringFlag{Name: "when-away", Usage: "while the peer cannot be reached, `refuse` the liens and charges of the projects homed there, or accept them up to --credit-line (default refuse)"}
	creditLine := &cli.StringFlag{Name: "credit-line", Usage: "with --when-away accept: what may be pending with the peer, in this bank's `CREDITS`, across every project homed there (a project's own --credit-line narrows it)"}
	whenAwayFlag, creditLineFlag := cli.Flag(whenAway), cli.Flag(creditLine)
	peerKey := &cli.StringFlag{Name: "peer-key", Usage: "the key file `FILE` the peer's bank wrote for this one (its own `ingot peer add --key-out`): this bank signs its requests to the peer with it"}
	return []*cli.Command{{
		Name:  "peer",
		Usage: "other banks this one exchanges allocations and charges with (docs/multi-site.md)",
		Subcommands: []*cli.Command{
			{Name: "add", ArgsUsage: "NAME", Usage: "add a peer bank: its URL, the projects it may act on, and the key it signs with", Action: peerAdd, Flags: []cli.Flag{
				&cli.StringFlag{Name: "url", Usage: "the peer's API, `URL` https://HOST:PORT (http only on loopback) (required)"},
				&cli.StringFlag{Name: "key-out", Usage: "write the key the peer's bank signs its requests here with to `FILE` (mode 0600), to hand to its operator (required)"},
				&cli.StringFlag{Name: "peer-ca-file", Usage: "check the peer's certificate against the authorities in PEM `FILE` rather than the system's"},
				&cli.StringSliceFlag{Name: "project", Usage: "a `PROJECT` of this bank the peer may act on (repeatable)"},
				whenAwayFlag, creditLineFlag, peerKey, serverKey}},
			{Name: "modify", ArgsUsage: "NAME", Usage: "change a peer's URL, CA file, away policy or agreement; its keys stay", Action: peerModify, Flags: []cli.Flag{
				&cli.StringFlag{Name: "url", Usage: "the peer's API, `URL` https://HOST:PORT (http only on loopback)"},
				&cli.StringFlag{Name: "peer-ca-file", Usage: "check the peer's certificate against the authorities in PEM `FILE` (\"\": the system's)"},
				whenAwayFlag, creditLineFlag,
				&cli.StringSliceFlag{Name: "add-project", Usage: "add `PROJECT` of this bank to those the peer may act on (repeatable)"},
				&cli.StringSliceFlag{Name: "remove-project", Usage: "remove `PROJECT` from those the peer may act on (repeatable): its transactions on it are refused from then on"},
				serverKey}},
			{Name: "key", ArgsUsage: "NAME FILE", Usage: "give the key file the peer's bank wrote for this one, once it has (replaces the one given before)", Action: peerSetKey, Flags: []cli.Flag{serverKey}},
			{Name: "list", Usage: "list the peers", Action: peerList, Flags: []cli.Flag{serverKey}},
			{Name: "show", ArgsUsage: "NAME", Usage: "show one peer", Action: peerShow, Flags: []cli.Flag{serverKey}},
			{Name: "transactions", Usage: "the transactions begun with peers (deposit --at): pending until the peer answers, then done or refused", Action: peerTransactions, Flags: []cli.Flag{
				&cli.BoolFlag{Name: "pending", Usage: "only those the peer has not answered yet"}, serverKey}},
			{Name: "reconcile", ArgsUsage: "NAME", Usage: "compare this bank's records of the transactions with a peer with the peer's own, asked of it now: every difference is printed, and the command exits 5 if there is one", Action: peerReconcile, Flags: []cli.Flag{
				periodFlag("only the transactions begun in `PERIOD`: a day (2026-11-28) or a month (2026-11), UTC (default: all)"), serverKey}},
			{Name: "statement", ArgsUsage: "NAME", Usage: "what this bank and the peer did for each other in a period (deposits, usage reported), with totals, from this bank's records", Action: peerStatement, Flags: []cli.Flag{
				periodFlag("the transactions begun in `PERIOD`: a day (2026-11-28) or a month (2026-11), UTC (required)"), serverKey}},
			{Name: "remove", ArgsUsage: "NAME", Usage: "end the agreement: the peer's keys stop working here at once (asks on a terminal)", Action: peerRemove, Flags: []cli.Flag{serverKey, yesFlag()}},
		},
	}}
}

// withPeers runs fn on the bank's peers: the database file's, or the
// server's (for an admin client).
func withPeers(c *cli.Context, makesKeys bool, fn func(peerRegistry) error) error {
	return withBank(c, func(b bank) error {
		reg, err := b.Peers(makesKeys)
		if err != nil {
			return err
		}
		return fn(reg)
	})
}

// readPeerKey reads a key file a peer's bank wrote, refusing one others
// may read as every key file is.
func readPeerKey(path string) (auth.Key, error) {
	raw, err := auth.ReadSecretFile(path)
	if err != nil {
		return auth.Key{}, fmt.Errorf("peer key: %w", err)
	}
	k, err := auth.ParseKeyFile(raw)
	if err != nil {
		return auth.Key{}, fmt.Errorf("peer key %s: %w", path, err)
	}
	return k, nil
}

func peerAdd(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	if c.String("url") == "" || c.String("key-out") == "" {
		return usageError{"ingot peer add needs --url (the peer's API) and --key-out (the file for the key its bank signs with)"}
	}
	var theirs *auth.Key
	if path := c.String("peer-key"); path != "" {
		k, err := readPeerKey(path)
		if err != nil {
			return err
		}
		theirs = &k
	}
	spec := peer.Spec{Name: a[0], URL: c.String("url"), CAFile: c.String("peer-ca-file"), Projects: c.StringSlice("project")}
	if err := peer.CheckURL(spec.URL); err != nil {
		return err
	}
	away, err := awayFlags(c)
	if err != nil {
		return err
	}
	if away.WhenAway != nil {
		spec.WhenAway = *away.WhenAway
	}
	if away.CreditLine != nil {
		spec.CreditLine = *away.CreditLine
	}
	return withPeers(c, true, func(reg peerRegistry) error {
		path := c.String("key-out")
		p, key, err := makeKeyFile(path, func() (peer.Peer, auth.Key, error) { return reg.Add(c.Context, request(c), spec, theirs) })
		if err != nil {
			return err
		}
		if flagBool(c, "json") {
			return writeJSON(c.App.Writer, struct {
				Peer    peer.Peer `json:"peer"`
				KeyID   string    `json:"key_id"`
				KeyFile string    `json:"key_file"`
			}{p, key.ID, path})
		}
		fmt.Fprintf(c.App.Writer, "peer %s: key %s written to %s: hand it to %s's operator, for `ingot peer add ... --peer-key FILE` or `ingot peer key NAME FILE` there\n", p.Name, key.ID, path, p.Name)
		return nil
	})
}

// awayFlags is the away policy and credit line given (nil: not given).
func awayFlags(c *cli.Context) (peer.Change, error) {
	var ch peer.Change
	if c.IsSet("when-away") {
		a, err := peer.ParseAway(c.String("when-away"))
		if err != nil {
			return ch, usageError{"--when-away: " + err.Error()}
		}
		ch.WhenAway = &a
	}
	if c.IsSet("credit-line") {
		line, err := parseNumber("credit-line", c.String("credit-line"))
		if err != nil {
			return ch, err
		}
		ch.CreditLine = &line
	}
	return ch, nil
}

func peerModify(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	ch, err := awayFlags(c)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		to   **string
	}{{"url", &ch.URL}, {"peer-ca-file", &ch.CAFile}} {
		if c.IsSet(f.name) {
			v := c.String(f.name)
			*f.to = &v
		}
	}
	ch.AddProjects, ch.RemoveProjects = c.StringSlice("add-project"), c.StringSlice("remove-project")
	if ch.URL == nil && ch.CAFile == nil && ch.WhenAway == nil && ch.CreditLine == nil && len(ch.AddProjects)+len(ch.RemoveProjects) == 0 {
		return usageError{"ingot peer modify: nothing to change (--url, --peer-ca-file, --when-away, --credit-line, --add-project, --remove-project)"}
	}
	return withPeers(c, false, func(reg peerRegistry) error {
		p, err := reg.Modify(c.Context, request(c), a[0], ch)
		if err != nil {
			return err
		}
		return showPeers(c, []peer.Peer{p})
	})
}

func peerSetKey(c *cli.Context) error {
	a, err := args(c, "NAME", "FILE")
	if err != nil {
		return err
	}
	k, err := readPeerKey(a[1])
	if err != nil {
		return err
	}
	return withPeers(c, false, func(reg peerRegistry) error {
		p, err := reg.SetKey(c.Context, request(c), a[0], k)
		if err != nil {
			return err
		}
		return showPeers(c, []peer.Peer{p})
	})
}

func peerList(c *cli.Context) error {
	return withPeers(c, false, func(reg peerRegistry) error {
		list, err := reg.List(c.Context)
		if err != nil {
			return err
		}
		return showPeers(c, list)
	})
}

func peerShow(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	return withPeers(c, false, func(reg peerRegistry) error {
		list, err := reg.List(c.Context)
		if err != nil {
			return err
		}
		for _, p := range list {
			if p.Name == a[0] {
				return showPeers(c, []peer.Peer{p})
			}
		}
		return fmt.Errorf("%w: no peer named %q", ledger.ErrNotFound, a[0])
	})
}

func peerRemove(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	question := fmt.Sprintf("remove peer %s? Its keys stop working here at once, for good.", a[0])
	if err := confirm(c, question); err != nil {
		return err
	}
	return withPeers(c, false, func(reg peerRegistry) error {
		p, err := reg.Remove(c.Context, request(c), a[0])
		if err != nil {
			return err
		}
		return showPeers(c, []peer.Peer{p})
	})
}

func showPeers(c *cli.Context, list []peer.Peer) error {
	t := table{headers: []string{"Peer", "URL", "Projects", "When away", "Signs with", "Created", "Removed"}, data: list}
	for _, p := range list {
		key, removed, away := "-", "-", string(p.WhenAway)
		if p.Key != nil {
			key = p.Key.ID
		}
		if !p.Revoked.IsZero() {
			removed = localTime(p.Revoked)
		}
		if p.WhenAway == peer.AwayAccept {
			away += " up to " + p.CreditLine.String()
		}
		t.add(p.Name, p.URL, strings.Join(p.Projects, ","), away, key, localTime(p.Created), removed)
	}
	return show(c, t)
}

// depositAt begins a deposit at a peer.
func depositAt(c *cli.Context, b bank, at string, spec ledger.DepositSpec) error {
	reg, err := b.Peers(false)
	if err != nil {
		return err
	}
	t, err := reg.Deposit(c.Context, request(c), at, spec)
	if err != nil {
		return err
	}
	return showTransactions(c, []peer.Transaction{t})
}

func peerTransactions(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	return withPeers(c, false, func(reg peerRegistry) error {
		list, err := reg.Transactions(c.Context, c.Bool("pending"))
		if err != nil {
			return err
		}
		return showTransactions(c, list)
	})
}

// periodFlag is --period, a day or a month in UTC (peer.ParsePeriod).
func periodFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "period", Usage: usage}
}

// peerPeriod is --period's span, zero bounds if none is given.
func peerPeriod(c *cli.Context) (peer.Period, error) {
	if c.String("period") == "" {
		return peer.Period{}, nil
	}
	return peer.ParsePeriod(c.String("period"))
}

func peerReconcile(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	period, err := peerPeriod(c)
	if err != nil {
		return err
	}
	return withPeers(c, false, func(reg peerRegistry) error {
		rec, err := reg.Reconcile(c.Context, a[0], period.From, period.To)
		if err != nil {
			return err
		}
		f, err := outputFormat(c)
		if err != nil {
			return err
		}
		if f == formatJSON {
			err = writeJSON(c.App.Writer, rec)
		} else {
			err = showDifferences(c, rec)
		}
		if err != nil {
			return err
		}
		if n := len(rec.Differences); n > 0 {
			return fmt.Errorf("%w: %d transactions with %s differ (%d agree)", errDifferences, n, rec.Peer, rec.Matched)
		}
		return nil
	})
}

func peerStatement(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	if c.String("period") == "" {
		return usageError{"ingot peer statement needs --period: a day (2026-11-28) or a month (2026-11), UTC"}
	}
	period, err := peerPeriod(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		reg, err := b.Peers(false)
		if err != nil {
			return err
		}
		st, err := reg.Statement(c.Context, a[0], period)
		if err != nil {
			return err
		}
		f, err := outputFormat(c)
		if err != nil || f == formatJSON {
			return cmp.Or(err, writeJSON(c.App.Writer, st))
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		t := table{headers: []string{"Direction", "Op", "Done", "Amount", "Pending", "Pending amount", "Refused"}, data: st.Lines}
		for _, l := range st.Lines {
			op := string(l.Op)
			if l.Hold {
				op += " (hold: not in the totals)"
			}
			t.add(string(l.Direction), op, strconv.Itoa(l.Count), amount(l.Amount, p), strconv.Itoa(l.Pending), amount(l.PendingAmount, p), strconv.Itoa(l.Refused))
		}
		if err := show(c, t); err != nil {
			return err
		}
		if f == formatTable {
			fmt.Fprintf(c.App.Writer, "%s with %s: sent %s (applied there), received %s (applied here)\n", st.Period.Name, st.Peer, amount(st.Sent, p), amount(st.Received, p))
		}
		return nil
	})
}

// showDifferences prints a reconciliation's differences, then what agrees.
func showDifferences(c *cli.Context, rec peer.Reconciliation) error {
	side := func(x *peer.Exchanged) string {
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("%s %s %s", x.Direction, x.State, x.Amount)
	}
	if len(rec.Differences) > 0 {
		t := table{headers: []string{"Transaction", "Op", "Began", "Here", "At peer", "Difference"}, data: rec.Differences}
		for _, d := range rec.Differences {
			t.add(d.ID, string(d.Op), localTime(d.Began), side(d.Here), side(d.There), d.Problem)
		}
		if err := show(c, t); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.App.Writer, "reconcile with %s: %d agree, %d differ\n", rec.Peer, rec.Matched, len(rec.Differences))
	return nil
}

func showTransactions(c *cli.Context, list []peer.Transaction) error {
	t := table{headers: []string{"Transaction", "Peer", "Op", "Amount", "State", "Created", "Answered", "Answer"}, data: orEmpty(list)}
	for _, x := range list {
		answered := "-"
		if !x.Answered.IsZero() {
			answered = localTime(x.Answered)
		}
		state := string(x.State)
		if x.NotSent {
			state += ", not sent"
		}
		t.add(x.ID, x.Peer, string(x.Op), x.Amount.String(), state, localTime(x.Created), answered, string(x.Answer))
	}
	return show(c, t)
}
