package main

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/hfs"
	"github.com/ingot-hpc/ingot/ledger"
)

// This file holds the HFS commands: `hfs compute` (a tree from a file, no
// bank needed), `hfs show` (an account's split now) and `fairshare` (Grid
// Engine's share tree), and the share table `balance` prints too.

// defaultHalfLife is Grid Engine's customary usage half-life: a week.
const defaultHalfLife = 7 * 24 * time.Hour

func hfsCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:  "hfs",
			Usage: "hierarchical fair share: compute a tree from a file, show how an account is split",
			Subcommands: []*cli.Command{
				{
					Name:  "compute",
					Usage: "run the HFS algorithm on a JSON file (- for standard input) and print the split; needs no bank",
					Description: "FILE is DESIGN's input: {\"total\", \"unit\", \"tree\"}, the reference cases of testdata/hfs as they are.\n" +
						"The output is JSON whatever --json or --parsable say: {\"quota\", \"allocated\", \"leftover\"}, and \"warnings\"\n" +
						"naming the nodes left short of their ownership, group non-shared or non_shared, when there are any.",
					ArgsUsage: "FILE",
					Action:    hfsCompute,
				},
				{
					Name:      "show",
					Usage:     "an account's tree now: each node's policy, quota, allocation, usage, liens and what a new lien may take",
					ArgsUsage: "ACCOUNT",
					Flags: []cli.Flag{&cli.StringSliceFlag{Name: "with",
						Usage: "show the split as it would be with the project's quota `NODE=QUOTA` (chem.lab1=dynamic:0.6; QUOTA as --quota takes it), changing nothing; repeatable"}},
					Action: hfsShow,
				},
			},
		},
		{
			Name: "preempt",
			Usage: "which running jobs to preempt so that a lien of AMOUNT on PROJECT fits: the fewest, in the account's preemption order " +
				"(changes nothing; the scheduler preempts, then places the lien)",
			ArgsUsage: "PROJECT AMOUNT",
			Flags:     []cli.Flag{&cli.StringFlag{Name: "machine", Usage: "the `MACHINE` the lien is for (default: credits usable on any machine)"}},
			Action:    preempt,
		},
		{
			Name:      "fairshare",
			Usage:     "an account's share tree now (Grid Engine): shares, decayed usage, target share, short-term entitlement, job priority",
			ArgsUsage: "ACCOUNT",
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "half-life", Value: defaultHalfLife, Usage: "usage half-life, a Go `DURATION` (0: no decay)"},
				&cli.Float64Flag{Name: "compensation", Usage: "Grid Engine's compensation `FACTOR` (0: off)"},
			},
			Action: fairShare,
		},
	}
}

// hfsCompute prints the HFS result of an input document. It is JSON by
// definition (DESIGN section 4), so the output flags do not change it.
func hfsCompute(c *cli.Context) error {
	a, err := args(c, "FILE")
	if err != nil {
		return err
	}
	data, err := readInput(c, a[0])
	if err != nil {
		return fmt.Errorf("hfs compute: %w", err)
	}
	in, err := hfs.DecodeInput(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: hfs compute %s: %v", ledger.ErrInvalid, a[0], err)
	}
	res, err := hfs.Compute(in.Total, in.Unit, in.Tree)
	if err != nil {
		return fmt.Errorf("%w: hfs compute %s: %v", ledger.ErrInvalid, a[0], err)
	}
	return res.EncodeJSON(c.App.Writer)
}

func hfsShow(c *cli.Context) error {
	a, err := args(c, "ACCOUNT")
	if err != nil {
		return err
	}
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	var with []ledger.QuotaChange
	for _, w := range c.StringSlice("with") {
		q, err := ledger.ParseQuotaChange(w)
		if err != nil {
			return fmt.Errorf("--with: %w", err)
		}
		with = append(with, q)
	}
	return withBank(c, func(b bank) error {
		s, err := b.Shares(c.Context, a[0], with...)
		if err != nil {
			return err
		}
		if len(with) > 0 && f == formatTable {
			fmt.Fprintf(c.App.Writer, "as it would be with %s (nothing is changed)\n", strings.Join(ledger.QuotaTexts(with), ", "))
		}
		if f == formatJSON {
			return writeJSON(c.App.Writer, s)
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		return writeShares(c, f, s, p, true)
	})
}

// shareHeaders are the figures of a node's share, in shareFigures' order:
// Available is what a lien on the node would get now, Unused what HFS
// would still give it (more, when the account's funds are held by liens
// of others that borrowed its surplus).
var shareHeaders = []string{"Quota", "Allocated", "Used", "Reserved", "Available", "Unused"}

// subtreeHeaders are a node's subtree's figures, rolled up (NodeShare's
// Subtree fields), which `hfs show` adds where projects have sub-projects.
var subtreeHeaders = []string{"SubtreeQuota", "SubtreeUsed", "SubtreeReserved"}

// ownerHeaders are the figures of ownership, in ownerFigures' order, that
// `hfs show` adds where the account has owners: what the node owns of the
// pool (its projects' together for a group), what its subtree uses
// (charges and liens), and how the two compare.
var ownerHeaders = []string{"Owned", "InUse", "Fed"}

// writeShares prints an account's split as a table of its nodes, under a
// line saying whether HFS is on (table format only); withPolicy adds each
// node's policy and the split's warnings (the nodes left short of their
// ownership, group non-shared or non_shared, by name), and where the
// account has owners, their settings and figures, with a line on its
// preemption.
func writeShares(c *cli.Context, f format, s ledger.AccountShares, p int32, withPolicy bool) error {
	owners := withPolicy && s.Owners
	if f == formatTable {
		fmt.Fprintln(c.App.Writer, sharesHeading(s, p))
		if owners {
			fmt.Fprintf(c.App.Writer, "preemption %s; ranked highest %s (preempted last), lowest %s (first)\n", s.Preemption, s.Highest, s.Lowest)
		}
	}
	if withPolicy {
		for _, w := range s.Warnings {
			fmt.Fprintf(c.App.ErrWriter, "ingot: warning: %s\n", w)
		}
	}
	t := table{headers: append([]string{"Node"}, shareHeaders...)}
	if withPolicy {
		t.headers = append([]string{"Node", "QuotaPolicy", "AcceptSurplus", "Limit", "NonShared"}, shareHeaders...)
	}
	if owners {
		t.headers = slices.Concat(t.headers[:5], []string{"Ownership", "GroupNonShared", "Priority"}, t.headers[5:], ownerHeaders)
	}
	// Where projects have sub-projects, a group's own figures say little:
	// its subtree's, rolled up, follow.
	groups := s.Groups()
	if groups {
		t.headers = append(t.headers, subtreeHeaders...)
	}
	for _, n := range s.Nodes {
		cells := []string{treeLabel(n.Name, f)}
		if withPolicy {
			cells = append(cells, n.Policy.QuotaText(), yesNo(n.Policy.AcceptSurplus), limitText(n.Policy.Limit), n.Policy.NonShared.String())
		}
		if owners {
			cells = append(cells, n.Policy.Ownership.String(), n.Policy.GroupNonShared.String(), strconv.Itoa(n.Policy.Priority))
		}
		cells = append(cells, shareFigures(n, s.HFS, p)...)
		if owners {
			cells = append(cells, amount(n.Owned, p), amount(n.InUse, p), fedText(n, p))
		}
		if groups {
			quota := "-"
			if s.HFS {
				quota = amount(n.SubtreeQuota, p)
			}
			cells = append(cells, quota, amount(n.SubtreeUsed, p), amount(n.SubtreeReserved, p))
		}
		t.add(cells...)
	}
	return write(c.App.Writer, f, t)
}

// fedText is how a node's in-use compares with what it owns: "under 400.00"
// (underfed by that much), "over 100.00", "-" when equal.
func fedText(n ledger.NodeShare, p int32) string {
	switch n.Fed {
	case "underfed":
		return "under " + amount(n.Owned.Sub(n.InUse), p)
	case "overfed":
		return "over " + amount(n.InUse.Sub(n.Owned), p)
	}
	return "-"
}

// sharesHeading says how the account is split.
func sharesHeading(s ledger.AccountShares, p int32) string {
	if !s.HFS {
		return fmt.Sprintf("no HFS policy in %s's tree: its projects share the account's pool", s.Account)
	}
	return fmt.Sprintf("HFS split of %s: pool %s, leftover %s", s.Account, amount(s.Pool, p), amount(s.Leftover, p))
}

// shareFigures are a node's figures; quota and allocation are "-" when the
// account is not split.
func shareFigures(n ledger.NodeShare, hfsOn bool, p int32) []string {
	quota, allocated := "-", "-"
	if hfsOn {
		quota, allocated = amount(n.Quota, p), amount(n.Allocated, p)
	}
	return []string{quota, allocated, amount(n.Used, p), amount(n.Reserved, p), amount(n.LienAvailable, p), amount(n.Available, p)}
}

// treeLabel indents a node's name by its depth in the table format; the
// other formats keep it flat.
func treeLabel(name string, f format) string {
	if f != formatTable {
		return name
	}
	return strings.Repeat("  ", strings.Count(name, ".")) + name
}

// preempt prints what to preempt for a lien: a line that says why, then
// the jobs (the JSON is the ledger's Preemption).
func preempt(c *cli.Context) error {
	a, err := args(c, "PROJECT", "AMOUNT")
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		precision, err := b.precision()
		if err != nil {
			return err
		}
		credits, err := ledger.ParseAmount(a[1], precision)
		if err != nil {
			return fmt.Errorf("preempt: %w", err)
		}
		p, err := b.Preempt(c.Context, a[0], c.String("machine"), credits)
		if err != nil {
			return err
		}
		f, err := outputFormat(c)
		if err != nil {
			return err
		}
		if f == formatTable {
			fmt.Fprintln(c.App.Writer, p.Explain())
			if len(p.Victims) == 0 {
				return nil
			}
		}
		t := table{headers: []string{"Machine", "Job", "Project", "User", "Holds"}, data: p}
		for _, v := range p.Victims {
			if v.Hidden {
				t.add("-", "-", "(not yours to read)", "-", amount(v.Held, precision))
				continue
			}
			t.add(v.Machine, v.JobID, v.Project, v.User, amount(v.Held, precision))
		}
		return write(c.App.Writer, f, t)
	})
}

func fairShare(c *cli.Context) error {
	a, err := args(c, "ACCOUNT")
	if err != nil {
		return err
	}
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		nodes, err := b.FairShare(c.Context, a[0], c.Duration("half-life"), c.Float64("compensation"))
		if err != nil {
			return err
		}
		p, err := b.precision()
		if err != nil {
			return err
		}
		t := table{headers: []string{"Node", "Shares", "Usage", "Target", "ShortTerm", "Priority", "Active"}, data: orEmpty(nodes)}
		for _, n := range nodes {
			t.add(treeLabel(n.Name, f), n.Shares.String(), strconv.FormatFloat(n.Usage, 'f', int(p), 64),
				fraction(n.Target), fraction(n.ShortTerm), fraction(n.Priority), yesNo(n.Active))
		}
		return write(c.App.Writer, f, t)
	})
}

// fraction shows a share-tree figure (a part of the whole tree).
func fraction(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
