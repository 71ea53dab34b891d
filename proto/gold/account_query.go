package gold

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
)

// accountFields are an account's row, Gold's balance columns: Amount (the
// active allocations' remaining credits), Reserved (active liens), Balance
// (Amount − Reserved), CreditLimit and Available (Balance + CreditLimit).
// The account's Description and Active are asked by glsaccount.
var (
	balanceFields = []string{"Id", "Name", "Amount", "Reserved", "Balance", "CreditLimit", "Available"}
	accountFields = slices.Concat(balanceFields, []string{"Description", "Active"})
)

// accountOptions are the options gbalance and gdeposit send. Project and
// User select the accounts that a project or a user can charge; ingot
// applies its membership rules always (UseRules), its accounts have no
// accounts above them (IncludeAncestors) and are charged on every machine
// (Machine, which must be one the bank has), so those three change
// nothing.
var accountOptions = []string{"Project", "User", "Machine", "UseRules", "IncludeAncestors"}

// queryAccounts answers the balances of the accounts selected, as
// gbalance asks.
func queryAccounts(c *call) (Response, error) {
	rows, err := c.accountRows()
	if err != nil {
		return Response{}, err
	}
	return c.rows(accountFields, rows)
}

// balance answers as Query does, with Count the total Balance of the
// accounts answered.
func balance(c *call) (Response, error) {
	rows, err := c.accountRows()
	if err != nil {
		return Response{}, err
	}
	resp, err := c.rows(balanceFields, rows)
	if err != nil {
		return Response{}, err
	}
	total := decimal.Zero
	for _, r := range rows {
		if c.meets(r) {
			total = total.Add(decimal.RequireFromString(r["Balance"]))
		}
	}
	resp.Count, resp.Message = total.String(), fmt.Sprintf("Balance of %s credits in %d accounts", total, len(resp.Data))
	return resp, nil
}

// accountRows are the balances of the accounts the options select: a
// project's account, the accounts of a user's projects (both: the
// project's account if the user may use it), else every account the
// client reads.
func (c *call) accountRows() ([]row, error) {
	if err := c.checkQuery(accountFields, accountOptions...); err != nil {
		return nil, err
	}
	project, _ := c.Option("Project")
	user, _ := c.Option("User")
	if machine, ok := c.Option("Machine"); ok {
		if err := c.knownMachine(machine); err != nil {
			return nil, err
		}
	}
	var accounts []string
	switch {
	case user != "":
		nodes, err := c.membershipsOf(user)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if project == "" || ledger.InSubtree(project, n) {
				accounts = append(accounts, ledger.AccountOf(n))
			}
		}
	case project != "":
		accounts = []string{ledger.AccountOf(project)}
	case c.equal("Name") != "" || c.equal("Id") != "":
		name, err := c.accountName(cmp.Or(c.equal("Name"), c.equal("Id")))
		if err != nil {
			return nil, err
		}
		accounts = []string{name}
	default:
		all, err := read[api.BalancesResponse](c, http.MethodGet, api.PathBalances, api.BalancesQuery{})
		if err != nil {
			return nil, err
		}
		return c.described(balanceRows(all.Balances))
	}
	var balances []ledger.NodeBalance
	for _, a := range slices.Compact(slices.Sorted(slices.Values(accounts))) {
		nb, err := read[ledger.NodeBalance](c, http.MethodGet, api.PathBalance, api.BalanceQuery{Node: a})
		if err != nil {
			return nil, err
		}
		balances = append(balances, nb)
	}
	return c.described(balanceRows(balances))
}

// described adds each account's Description and Active.
func (c *call) described(rows []row) ([]row, error) {
	nodes, err := read[api.List[ledger.Node]](c, http.MethodGet, api.PathNodes, api.NodesQuery{})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if i := slices.IndexFunc(nodes.Items, func(n ledger.Node) bool { return n.Name == r["Name"] }); i >= 0 {
			r["Description"], r["Active"] = nodes.Items[i].Description, gbool(nodes.Items[i].Active)
		}
	}
	return rows, nil
}

// membershipsOf are the nodes a user is a member or manager of; a client
// that may not read the user's record is refused by the API.
func (c *call) membershipsOf(user string) ([]string, error) {
	users, err := read[api.List[ledger.User]](c, http.MethodGet, api.PathUsers, api.NoQuery{})
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(users.Items, func(u ledger.User) bool { return u.Name == user })
	if i < 0 {
		return nil, Errorf(CodeState, "User %s does not exist", ledger.Excerpt(user))
	}
	var nodes []string
	for _, m := range users.Items[i].Memberships {
		nodes = append(nodes, m.Node)
	}
	return nodes, nil
}

func balanceRows(balances []ledger.NodeBalance) []row {
	rows := make([]row, len(balances))
	for i, nb := range balances {
		b := nb.Balance
		rows[i] = row{"Id": nb.Node, "Name": nb.Node, "Amount": b.Amount.String(), "Reserved": b.Reserved.String(), "Balance": b.Balance.String(),
			"CreditLimit": b.CreditLimit.String(), "Available": b.Available.String()}
	}
	return rows
}

// allocationFields are an allocation's row, as glsalloc and gbalance ask
// for them: Amount what remains, Deposited all that was put in, CallType
// Normal (ingot has no back-dated deposits of Gold's other call types).
var allocationFields = []string{"Id", "Account", "Active", "StartTime", "EndTime", "Amount", "CreditLimit", "Deposited", "Description", "CallType", "Machine"}

// queryAllocations answers the allocations of the accounts the client
// reads that have not ended (an ended one is in the statements), every
// one yet to start among them, as Gold lists them: now, or as they stood
// at the option Time (gstatement's beginning and ending balances), none
// before the bank's beginning (Time 0, Gold's -infinity).
func queryAllocations(c *call) (Response, error) {
	if err := c.checkQuery(allocationFields, "Time"); err != nil {
		return Response{}, err
	}
	q := api.BalancesQuery{AllUpcoming: true}
	if v, ok := c.Option("Time"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Response{}, Errorf(CodeBadData, "Time %s is not a time in epoch seconds", ledger.Excerpt(v))
		}
		if n <= 0 {
			return c.rows(allocationFields, nil)
		}
		q.At = time.Unix(n, 0).UTC()
	}
	all, err := read[api.BalancesResponse](c, http.MethodGet, api.PathBalances, q)
	if err != nil {
		return Response{}, err
	}
	var rows []row
	for _, nb := range all.Balances {
		for _, a := range nb.Allocations {
			rows = append(rows, row{"Id": idText(a.ID), "Account": a.Account, "Active": gbool(a.Active), "StartTime": epoch(a.Start), "EndTime": epoch(a.End),
				"Amount": a.Amount.String(), "CreditLimit": a.CreditLimit.String(), "Deposited": a.Deposited.String(), "Description": a.Description,
				"CallType": "Normal", "Machine": a.Machine})
		}
	}
	return c.rows(allocationFields, rows)
}
