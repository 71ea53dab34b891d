package gold

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/clients"
)

// transactionFields are a journal entry's row, as glstxn and gstatement
// list Gold's transactions: Id is its number, Object and Action what Gold
// would have called it, Amount what it moved or held, Delta its net
// change to the balances, CreationTime when it was made. Name is what
// Gold's transaction names, the job or the node; Allocation the
// allocations it changed; Count 1; Child (Gold's member of an
// association) is empty: ingot journals no associations.
var transactionFields = []string{"Id", "Object", "Action", "Actor", "Name", "Child", "Account", "Project", "User", "Machine", "JobId",
	"Allocation", "Count", "Amount", "Delta", "CreationTime", "Description", "RequestId"}

// goldNames are the object and action of each kind of entry.
var goldNames = map[ledger.Kind][2]string{
	ledger.KindInit:             {"System", "Create"},
	ledger.KindNodeCreate:       {"Project", "Create"},
	ledger.KindNodeModify:       {"Project", "Modify"},
	ledger.KindNodeDeactivate:   {"Project", "Deactivate"},
	ledger.KindNodeReactivate:   {"Project", "Activate"},
	ledger.KindUserAdd:          {"User", "Create"},
	ledger.KindUserModify:       {"User", "Modify"},
	ledger.KindMachineAdd:       {"Machine", "Create"},
	ledger.KindMachineModify:    {"Machine", "Modify"},
	ledger.KindDeposit:          {"Account", "Deposit"},
	ledger.KindWithdraw:         {"Account", "Withdraw"},
	ledger.KindTransfer:         {"Account", "Transfer"},
	ledger.KindAllocationModify: {"Allocation", "Modify"},
	ledger.KindRecord:           {"Record", "Modify"},
	ledger.KindLienPlace:        {"Job", "Reserve"},
	ledger.KindLienExtend:       {"Reservation", "Modify"},
	ledger.KindLienModify:       {"Reservation", "Modify"},
	ledger.KindLienRelease:      {"Reservation", "Delete"},
	ledger.KindLienExpire:       {"Reservation", "Expire"},
	ledger.KindCharge:           {"Job", "Charge"},
	ledger.KindRefund:           {"Job", "Refund"},
}

// queryTransactions answers the journal entries the conditions select.
// The bank is asked for the entries of a node (Where Project or Account),
// of a job (Where JobId) and of a period (Where CreationTime), as the
// journal's own filters; a client other than an admin must name a node.
func queryTransactions(c *call) (Response, error) {
	if err := c.checkQuery(transactionFields); err != nil {
		return Response{}, err
	}
	account, err := c.accountName(c.equal("Account"))
	if err != nil {
		return Response{}, err
	}
	q := api.JournalQuery{Node: cmp.Or(c.equal("Project"), account), Job: c.equal("JobId")}
	if q.Job != "" {
		q.Machine = c.equal("Machine")
	}
	for _, w := range c.Wheres {
		if w.Name != "CreationTime" {
			continue
		}
		n, err := strconv.ParseInt(w.Value, 10, 64)
		if err != nil {
			return Response{}, Errorf(CodeBadData, "CreationTime %s is not a time in epoch seconds", ledger.Excerpt(w.Value))
		}
		t := time.Unix(n, 0).UTC()
		switch strings.ToLower(w.Op) {
		case "ge":
			q.Since = t
		case "gt":
			q.Since = t.Add(time.Second)
		case "lt":
			q.Until = t
		case "le":
			q.Until = t.Add(time.Second)
		}
	}
	entries, err := c.journal(q)
	if err != nil {
		return Response{}, err
	}
	rows := make([]row, len(entries.Items))
	for i, e := range entries.Items {
		rows[i] = transactionRow(e, account)
	}
	return c.rows(transactionFields, rows)
}

// journal are the entries q selects. A client other than an admin reads
// the journal of a node only, so a query naming none (glstxn -J JOBID)
// is asked of each account it reads, and the answers merged in the
// journal's order.
func (c *call) journal(q api.JournalQuery) (api.List[ledger.Entry], error) {
	if q.Node != "" || c.client.Role == clients.RoleAdmin {
		return read[api.List[ledger.Entry]](c, http.MethodGet, api.PathJournal, q)
	}
	numbers, err := c.accountNumbers()
	if err != nil {
		return api.List[ledger.Entry]{}, err
	}
	var all []ledger.Entry
	for _, account := range slices.Sorted(maps.Keys(numbers)) {
		q.Node = account
		entries, err := read[api.List[ledger.Entry]](c, http.MethodGet, api.PathJournal, q)
		if err != nil {
			return api.List[ledger.Entry]{}, err
		}
		all = append(all, entries.Items...)
	}
	slices.SortFunc(all, func(a, b ledger.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return api.ListOf(slices.CompactFunc(all, func(a, b ledger.Entry) bool { return a.Seq == b.Seq })), nil
}

// transactionRow is an entry's row, as account sees it when a query names
// one (a transfer is a debit of one account and a credit of the other):
// its Delta is then the change to that account's allocations.
func transactionRow(e ledger.Entry, account string) row {
	names := goldNames[e.Kind]
	r := row{"Id": idText(e.Seq), "Object": names[0], "Action": names[1], "Actor": e.Actor, "Project": e.Node,
		"CreationTime": strconv.FormatInt(e.Time.Unix(), 10), "Description": e.Description, "RequestId": e.RequestID}
	r["Name"], r["Count"] = e.Node, "1"
	if e.Node != "" {
		r["Account"] = ledger.AccountOf(e.Node)
	}
	if job := e.Job(); job != nil {
		r["Account"], r["Project"], r["User"], r["Machine"], r["JobId"], r["Name"] = job.Account, job.Project, job.User, job.Machine, job.JobID, job.JobID
	}
	var allocations []string
	for _, d := range e.Deltas {
		if id := idText(d.Allocation); (account == "" || d.Account == account) && !slices.Contains(allocations, id) {
			allocations = append(allocations, id)
		}
	}
	r["Allocation"] = strings.Join(allocations, ",")
	if account != "" {
		r["Account"] = account
	}
	in, out := decimal.Zero, decimal.Zero
	for _, d := range e.Deltas {
		if account != "" && d.Account != account {
			continue
		}
		if d.Amount.IsPositive() {
			in = in.Add(d.Amount)
		} else {
			out = out.Sub(d.Amount)
		}
	}
	switch {
	case !in.IsZero() || !out.IsZero():
		r["Amount"], r["Delta"] = decimal.Max(in, out).String(), in.Sub(out).String()
	case e.Lien != nil:
		r["Amount"], r["Delta"] = e.Lien.Amount.String(), "0"
	}
	return r
}
