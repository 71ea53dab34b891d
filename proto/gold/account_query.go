package gold

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
)

// accountFields are an account's row, Gold's balance columns: Amount (the
// active allocations' remaining credits), Reserved (active liens), Balance
// (Amount − Reserved), CreditLimit and Available (Balance + CreditLimit).
var accountFields = []string{"Id", "Name", "Amount", "Reserved", "Balance", "CreditLimit", "Available"}

// accountOptions are the options gbalance sends. Project and User select
// the accounts that a project or a user can charge; ingot applies its
// membership rules always (UseRules) and its accounts have no accounts
// above them (IncludeAncestors), so those two change nothing.
var accountOptions = []string{"Project", "User", "UseRules", "IncludeAncestors"}

// queryAccounts answers the balances of the accounts selected, as
// gbalance asks.
func queryAccounts(c *call) (Response, error) {
	rows, err := c.accountRows()
	if err != nil {
		return Response{}, err
	}
	return c.rows(accountFields, rows), nil
}

// balance answers as Query does, with Count the total Balance of the
// accounts answered.
func balance(c *call) (Response, error) {
	rows, err := c.accountRows()
	if err != nil {
		return Response{}, err
	}
	resp := c.rows(accountFields, rows)
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
		accounts = []string{cmp.Or(c.equal("Name"), c.equal("Id"))}
	default:
		all, err := read[api.BalancesResponse](c, http.MethodGet, api.PathBalances, api.BalancesQuery{})
		if err != nil {
			return nil, err
		}
		return balanceRows(all.Balances), nil
	}
	var balances []ledger.NodeBalance
	for _, a := range slices.Compact(slices.Sorted(slices.Values(accounts))) {
		nb, err := read[ledger.NodeBalance](c, http.MethodGet, api.PathBalance, api.BalanceQuery{Node: a})
		if err != nil {
			return nil, err
		}
		balances = append(balances, nb)
	}
	return balanceRows(balances), nil
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
