package gold

import (
	"net/http"
	"strconv"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
)

// jobRowFields are a charged job's row, as glsjob lists Gold's jobs: one row
// for each job (machine and job id) that was charged, Id its first
// charge's id, Charge what its charges took less what was refunded, its
// resources and times as its last charge reported them, Stage Charge. A
// job only reserved is no job here: its lien is a reservation (glsres).
var jobRowFields = []string{"Id", "JobId", "User", "Project", "Machine", "Queue", "QualityOfService", "Stage", "Charge", "Processors", "Nodes",
	"WallDuration", "StartTime", "EndTime", "Description"}

func queryJobs(c *call) (Response, error) {
	if err := c.checkQuery(jobRowFields); err != nil {
		return Response{}, err
	}
	charges, err := read[api.List[ledger.Charge]](c, http.MethodGet, api.PathCharges, api.ChargesQuery{Node: c.equal("Project"), User: c.equal("User")})
	if err != nil {
		return Response{}, err
	}
	var rows []row
	index := map[[2]string]int{}
	for _, ch := range charges.Items {
		u, err := lien.UsageOf(ch)
		if err != nil {
			return Response{}, err
		}
		key := [2]string{ch.Machine, ch.JobID}
		i, seen := index[key]
		if !seen {
			i = len(rows)
			index[key] = i
			rows = append(rows, row{"Id": idText(ch.ID), "JobId": ch.JobID, "User": ch.User, "Project": ch.Project, "Machine": ch.Machine,
				"Stage": "Charge", "Charge": "0", "Description": ""})
		}
		r := rows[i]
		r["Charge"] = add(r["Charge"], ch.Amount.Sub(ch.Refunded).String())
		r["Queue"], r["QualityOfService"] = u.Partition, u.QOS
		r["Processors"], r["Nodes"], r["WallDuration"] = strconv.FormatInt(u.Processors, 10), strconv.FormatInt(u.Nodes, 10), strconv.FormatInt(u.WallclockSeconds, 10)
		if !u.Start.IsZero() {
			r["StartTime"] = epoch(u.Start)
		}
		r["EndTime"] = epoch(ch.Time)
	}
	return c.rows(jobRowFields, rows)
}

// quotationFields are a guaranteed quote's row, as glsquote lists Gold's
// quotations: Amount its price, Job empty (a quote is for a job not yet
// named), StartTime when it was made, EndTime when it expires, Uses how
// many jobs may still use it.
var quotationFields = []string{"Id", "Amount", "Job", "Project", "User", "Machine", "StartTime", "EndTime", "WallDuration", "Uses", "Description"}

func queryQuotations(c *call) (Response, error) {
	if err := c.checkQuery(quotationFields); err != nil {
		return Response{}, err
	}
	quotes, err := read[api.List[lien.StoredQuote]](c, http.MethodGet, api.PathQuotes, api.NoQuery{})
	if err != nil {
		return Response{}, err
	}
	rows := make([]row, len(quotes.Items))
	for i, q := range quotes.Items {
		rows[i] = row{"Id": idText(q.ID), "Amount": q.Amount.Credits.String(), "Project": q.Project, "User": q.User, "Machine": q.Machine,
			"StartTime": epoch(q.Created), "EndTime": epoch(q.Expires), "WallDuration": strconv.FormatInt(q.Request.WallclockLimitSeconds, 10),
			"Uses": strconv.Itoa(q.Uses - q.Used)}
	}
	return c.rows(quotationFields, rows)
}

// quotationChargeRateFields are the rates a quotation froze. ingot's
// guarantee freezes the whole rate table (ingot quote shows it), so no
// row of Gold's form is answered.
var quotationChargeRateFields = []string{"Quotation", "Type", "Name", "Rate"}

func queryQuotationChargeRates(c *call) (Response, error) {
	if err := c.checkQuery(quotationChargeRateFields); err != nil {
		return Response{}, err
	}
	return c.rows(quotationChargeRateFields, nil)
}
