package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
)

// nodeKind is "account" or "project": the same node tree seen from two
// commands, which differ in what names they accept.
type nodeKind string

func (k nodeKind) check(name string) error {
	isAccount := !strings.Contains(name, ".")
	switch {
	case k == "account" && !isAccount:
		return usageError{fmt.Sprintf("%s is a project name; accounts have no dot (use `ingot project`)", ledger.Excerpt(name))}
	case k == "project" && isAccount:
		return usageError{fmt.Sprintf("%s is an account name; a project is named ACCOUNT.PROJECT, e.g. chem.lab1 in account chem", ledger.Excerpt(name))}
	}
	return nil
}

// withArticle is the kind after its indefinite article: "an account".
func (k nodeKind) withArticle() string {
	if k == "account" {
		return "an account"
	}
	return "a project"
}

// nameArg is the command's one NAME argument, checked for this kind.
func (k nodeKind) nameArg(c *cli.Context) (string, error) {
	a, err := args(c, "NAME")
	if err != nil {
		return "", err
	}
	return a[0], k.check(a[0])
}

func nodeCommands() []*cli.Command {
	return []*cli.Command{nodeCommand("account"), nodeCommand("project")}
}

func nodeCommand(kind nodeKind) *cli.Command {
	policyFlags := accountPolicyFlags()
	if kind == "project" {
		policyFlags = projectPolicyFlags()
	}
	common := []cli.Flag{
		descriptionFlag(fmt.Sprintf("the %s (list and show print it)", kind)),
		&cli.BoolFlag{Name: "any-user", Usage: "admit jobs of users who are not members (--any-user=false to stop)"},
	}
	create := append(common, policyFlags...)
	list := "list accounts"
	if kind == "project" {
		create = append(create, homeFlags()...)
		list = "list projects, all or of one account or project"
	}
	cmd := &cli.Command{
		Name:  string(kind),
		Usage: fmt.Sprintf("create, list, show, modify, deactivate and reactivate %ss", kind),
		Subcommands: []*cli.Command{
			{Name: "create", Usage: "create " + kind.withArticle(), ArgsUsage: "NAME", Flags: create, Action: kind.create},
			{Name: "list", Usage: list, ArgsUsage: "[NAME]", Action: kind.list},
			{Name: "show", Usage: "show one " + string(kind), ArgsUsage: "NAME", Action: kind.show},
			{Name: "modify", Usage: "change " + kind.withArticle(), ArgsUsage: "NAME", Flags: append(common, policyFlags...), Action: kind.modify},
			{Name: "deactivate", Usage: "stop " + kind.withArticle() + " and everything under it from taking part in changes (asks on a terminal)", ArgsUsage: "NAME",
				Flags: []cli.Flag{yesFlag()}, Action: kind.deactivate},
			{Name: "reactivate", Usage: "make a deactivated " + string(kind) + " usable again, with what is under it (but what was deactivated on its own)", ArgsUsage: "NAME", Action: kind.reactivate},
		},
	}
	if kind == "project" {
		cmd.Usage = "create, list, show, modify, deactivate and reactivate projects and set their HFS policy"
		cmd.Subcommands = append(cmd.Subcommands, &cli.Command{
			Name: "policy", Usage: "set a project's HFS policy from the flags given (the others stay); without flags, show the project",
			ArgsUsage: "NAME", Flags: projectPolicyFlags(), Action: kind.policy,
		})
	}
	return cmd
}

// projectPolicyFlags set a project's HFS policy (applyPolicyFlags reads them).
func projectPolicyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "quota", Usage: "HFS quota: static:CREDITS, dynamic:FRACTION, shares:WEIGHT or none (in an account split by HFS, a new project needs one; none makes it without on purpose)"},
		&cli.BoolFlag{Name: "accept-surplus", Usage: "may receive surplus from above (--accept-surplus=false to stop)"},
		&cli.StringFlag{Name: "limit", Usage: "cap on what the subtree may be allocated (none to remove)"},
		&cli.StringFlag{Name: "non-shared", Usage: "part of the own quota never lent as surplus"},
		&cli.StringFlag{Name: "ownership", Usage: "credits the project owns (projects without sub-projects; 0 for none): carved out of the pool first, lent while unused, taken back by preemption"},
		&cli.StringFlag{Name: "group-non-shared", Usage: "credits reserved for the project's subtree, carved out of the pool first and never lent outside it (0 for none)"},
		&cli.IntFlag{Name: "priority", Usage: fmt.Sprintf("rank among its siblings, 0..%d (0 the default, the lowest): a preemption takes from the lowest first", ledger.MaxPriority)},
	}
}

// homeFlags home a new project at a peer bank (traceback).
func homeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "home", Usage: "PEER:PROJECT: the project of a peer bank its liens, charges and releases are forwarded to"},
		&cli.StringFlag{Name: "rate-ratio", Usage: "with --home: the home bank's credits for one of this bank's"},
		&cli.StringFlag{Name: "credit-line", Usage: "with --home: the project's own limit on what may be pending with the home bank while it cannot be reached, in its credits (0: refuse then), within the peer's (ingot peer modify --when-away) (default: the peer's alone)"},
	}
}

// homeOf is the home --home names, or nil.
func homeOf(c *cli.Context) (*ledger.Home, error) {
	if !c.IsSet("home") {
		for _, f := range []string{"rate-ratio", "credit-line"} {
			if c.IsSet(f) {
				return nil, usageError{"--" + f + " needs --home"}
			}
		}
		return nil, nil
	}
	peerName, project, ok := strings.Cut(c.String("home"), ":")
	if !ok || peerName == "" || project == "" {
		return nil, usageError{fmt.Sprintf("--home %q: want PEER:PROJECT", c.String("home"))}
	}
	if !c.IsSet("rate-ratio") {
		return nil, usageError{"--home needs --rate-ratio"}
	}
	h := &ledger.Home{Peer: peerName, Project: project}
	var err error
	if h.RateRatio, err = decimal.NewFromString(c.String("rate-ratio")); err != nil {
		return nil, usageError{fmt.Sprintf("--rate-ratio %q: not a decimal number", c.String("rate-ratio"))}
	}
	if c.IsSet("credit-line") {
		line, err := decimal.NewFromString(c.String("credit-line"))
		if err != nil {
			return nil, usageError{fmt.Sprintf("--credit-line %q: not a decimal number", c.String("credit-line"))}
		}
		h.CreditLine = &line
	}
	return h, nil
}

// accountPolicyFlags set an account's own HFS settings.
func accountPolicyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "preemption", Usage: "preemption order: top-down (the projects furthest away first; the default) or bottom-up (the closest first)"},
	}
}

func (k nodeKind) create(c *cli.Context) error {
	name, err := k.nameArg(c)
	if err != nil {
		return err
	}
	// --quota none says that a project of an account split by HFS is
	// meant to have no quota; the ledger refuses one that merely lacks it.
	spec := ledger.NodeSpec{Name: name, Description: c.String("description"), AnyUser: c.Bool("any-user"), NoQuota: c.String("quota") == none}
	if err := applyPolicyFlags(c, &spec.Policy); err != nil {
		return err
	}
	if spec.Home, err = homeOf(c); err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		n, err := b.CreateNode(c.Context, request(c), spec)
		if err != nil {
			return err
		}
		return showCreated(c, b, n)
	})
}

// nodeWithShare is what `project create --json` prints: the node, and for
// a project of an account split by HFS, its share now.
type nodeWithShare struct {
	ledger.Node
	Share *ledger.NodeShare `json:"share,omitempty"`
}

// showCreated shows a new node and, for a project of an account split by
// HFS, what HFS gives it now (as `hfs show` has it): a project whose quota
// comes to nothing is seen when it is made, not when its first job is
// refused. The node is made whatever happens here: a split that cannot be
// read (a manager's scope below the account) is a note, not a failure.
func showCreated(c *cli.Context, b bank, n ledger.Node) error {
	if n.IsAccount() {
		return showNode(c, n)
	}
	s, err := b.Shares(c.Context, n.Account())
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "ingot: note: %s is made; its HFS share is not shown: %s\n", n.Name, message(err))
		return showNode(c, n)
	}
	i := slices.IndexFunc(s.Nodes, func(ns ledger.NodeShare) bool { return ns.Name == n.Name })
	if !s.HFS || i < 0 {
		return showNode(c, n)
	}
	t := nodeTable(n)
	t.data = nodeWithShare{Node: n, Share: &s.Nodes[i]}
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	if err := write(c.App.Writer, f, t); err != nil || f == formatJSON {
		return err
	}
	if f == formatTable {
		fmt.Fprintln(c.App.Writer)
	}
	s.Nodes = s.Nodes[i : i+1]
	p, err := b.precision()
	if err != nil {
		return err
	}
	return writeShares(c, f, s, p, true)
}

func (k nodeKind) modify(c *cli.Context) error {
	name, err := k.nameArg(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		var change ledger.NodeChange
		if c.IsSet("description") {
			d := c.String("description")
			change.Description = &d
		}
		if c.IsSet("any-user") {
			b := c.Bool("any-user")
			change.AnyUser = &b
		}
		policyFlags := accountPolicyFlags()
		if k == "project" {
			policyFlags = projectPolicyFlags()
		}
		if slices.ContainsFunc(policyFlags, func(f cli.Flag) bool { return c.IsSet(f.Names()[0]) }) {
			n, err := b.Node(c.Context, name)
			if err != nil {
				return err
			}
			p := n.Policy
			if err := applyPolicyFlags(c, &p); err != nil {
				return err
			}
			change.Policy = &p
		}
		n, err := b.ModifyNode(c.Context, request(c), name, change)
		if err != nil {
			return err
		}
		warnShortfall(c, b, n)
		return showNode(c, n)
	})
}

// warnShortfall says on standard error what the pool of the node's
// account does not cover of the ownership and group non-shared set in it,
// and which non_shared is above its node's own quota (both allowed, as LSF
// allows them: hfs show has the shortfall too). A split the client does
// not read is left unsaid.
func warnShortfall(c *cli.Context, b bank, n ledger.Node) {
	s, err := b.Shares(c.Context, n.Account())
	if err != nil {
		return
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "ingot: warning: %s\n", w)
	}
}

// policy is `project policy`: modify with only the policy flags, or show
// when none is given.
func (k nodeKind) policy(c *cli.Context) error {
	for _, f := range projectPolicyFlags() {
		if c.IsSet(f.Names()[0]) {
			return k.modify(c)
		}
	}
	return k.show(c)
}

func (k nodeKind) deactivate(c *cli.Context) error {
	name, err := k.nameArg(c)
	if err != nil {
		return err
	}
	question := fmt.Sprintf("deactivate %s %s and everything under it? Every job and change there is refused until `ingot %s reactivate %s`.", k, name, k, name)
	if err := confirm(c, question); err != nil {
		return err
	}
	return setActive(c, name, bankService.DeactivateNode)
}

func (k nodeKind) reactivate(c *cli.Context) error {
	name, err := k.nameArg(c)
	if err != nil {
		return err
	}
	return setActive(c, name, bankService.ReactivateNode)
}

// setActive deactivates or reactivates the node named, as change does.
func setActive(c *cli.Context, name string, change func(bankService, context.Context, ledger.Request, string) (ledger.Node, error)) error {
	return withBank(c, func(b bank) error {
		n, err := change(b.bankService, c.Context, request(c), name)
		if err != nil {
			return err
		}
		return showNode(c, n)
	})
}

func (k nodeKind) show(c *cli.Context) error {
	name, err := k.nameArg(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		n, err := b.Node(c.Context, name)
		if err != nil {
			return err
		}
		t := nodeTable(n)
		if n.IsAccount() {
			numbers, err := b.AccountNumbers(c.Context)
			if err != nil {
				return err
			}
			t.add("GoldId", strconv.FormatUint(numbers[n.Name], 10))
			t.data = struct {
				ledger.Node
				GoldID uint64 `json:"gold_id"`
			}{n, numbers[n.Name]}
		}
		return show(c, t)
	})
}

func (k nodeKind) list(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageError{"list takes at most one NAME"}
	}
	return withBank(c, func(b bank) error {
		nodes, err := b.Nodes(c.Context, c.Args().First())
		if err != nil {
			return err
		}
		t := table{headers: []string{"Name", "Active", "AnyUser", "Quota", "AcceptSurplus", "Limit", "NonShared", "Description"}}
		var shown []ledger.Node
		for _, n := range nodes {
			if n.IsAccount() != (k == "account") {
				continue
			}
			shown = append(shown, n)
			t.add(n.Name, yesNo(n.Active), yesNo(n.AnyUser), n.Policy.QuotaText(), yesNo(n.Policy.AcceptSurplus), limitText(n.Policy.Limit), n.Policy.NonShared.String(), n.Description)
		}
		t.data = orEmpty(shown)
		return show(c, t)
	})
}

func showNode(c *cli.Context, n ledger.Node) error { return show(c, nodeTable(n)) }

// nodeTable is a node as Field and Value rows.
func nodeTable(n ledger.Node) table {
	t := table{headers: []string{"Field", "Value"}, data: n}
	t.add("Name", n.Name)
	t.add("Kind", map[bool]string{true: "account", false: "project of " + n.Account()}[n.IsAccount()])
	t.add("Active", yesNo(n.Active))
	t.add("AnyUser", yesNo(n.AnyUser))
	t.add("Quota", n.Policy.QuotaText())
	t.add("AcceptSurplus", yesNo(n.Policy.AcceptSurplus))
	t.add("Limit", limitText(n.Policy.Limit))
	t.add("NonShared", n.Policy.NonShared.String())
	if h := n.Home; h != nil {
		line := "the peer's"
		if h.CreditLine != nil {
			line = h.CreditLine.String()
		}
		t.add("Home", fmt.Sprintf("%s (rate ratio %s, credit line %s)", h, h.RateRatio, line))
	}
	// The settings of owners and preemption only where set: most trees
	// have none.
	if !n.Policy.Ownership.IsZero() {
		t.add("Ownership", n.Policy.Ownership.String())
	}
	if !n.Policy.GroupNonShared.IsZero() {
		t.add("GroupNonShared", n.Policy.GroupNonShared.String())
	}
	if n.Policy.Priority != 0 {
		t.add("Priority", strconv.Itoa(n.Policy.Priority))
	}
	if n.Policy.Preemption != "" {
		t.add("Preemption", n.Policy.Preemption.String())
	}
	t.add("Description", n.Description)
	t.add("Created", localTime(n.Created))
	return t
}

func limitText(l *decimal.Decimal) string {
	if l == nil {
		return "none"
	}
	return l.String()
}

// parseNumber reads a value of a policy flag in the bank's one grammar of
// decimals, as the JSON API reads a policy's values: so a sign is refused
// here, as there, and the ledger says what else is wrong with a value.
func parseNumber(flag, s string) (decimal.Decimal, error) {
	return ledger.ParseDecimal("--"+flag, s)
}

// applyPolicyFlags sets the policy fields whose flags were given.
func applyPolicyFlags(c *cli.Context, p *ledger.Policy) error {
	if c.IsSet("quota") {
		var err error
		if p.QuotaKind, p.Quota, err = ledger.ParseQuota("--quota", c.String("quota")); err != nil {
			return err
		}
	}
	if c.IsSet("accept-surplus") {
		p.AcceptSurplus = c.Bool("accept-surplus")
	}
	if c.IsSet("limit") {
		if s := c.String("limit"); s == "none" {
			p.Limit = nil
		} else {
			v, err := parseNumber("limit", s)
			if err != nil {
				return err
			}
			p.Limit = &v
		}
	}
	for _, f := range []struct {
		flag  string
		value *decimal.Decimal
	}{{"non-shared", &p.NonShared}, {"ownership", &p.Ownership}, {"group-non-shared", &p.GroupNonShared}} {
		if !c.IsSet(f.flag) {
			continue
		}
		v, err := parseNumber(f.flag, c.String(f.flag))
		if err != nil {
			return err
		}
		*f.value = v
	}
	if c.IsSet("priority") {
		p.Priority = c.Int("priority")
	}
	if c.IsSet("preemption") {
		p.Preemption = ledger.PreemptionOrder(c.String("preemption"))
	}
	return nil
}

// orEmpty makes a nil slice print as [] in JSON.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
