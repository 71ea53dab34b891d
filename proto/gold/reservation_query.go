package gold

import (
	"net/http"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
)

// reservationFields are a lien's row, as glsres lists Gold's reservations:
// Name and JobId are the job's id, StartTime when the lien was placed,
// EndTime when it expires. Job is Gold's job record, the job's id here;
// Description is empty: a lien has none.
var reservationFields = []string{"Id", "Name", "Job", "JobId", "Account", "Project", "User", "Machine", "Amount", "Charged", "StartTime", "EndTime", "State", "Description"}

// queryReservations answers the active liens the client reads (of a
// project's subtree for Where Project=...). A lien charged or released is
// no reservation any more: its history is in the transactions.
func queryReservations(c *call) (Response, error) {
	if err := c.checkQuery(reservationFields); err != nil {
		return Response{}, err
	}
	liens, err := read[api.List[ledger.Lien]](c, http.MethodGet, api.PathLiens, api.LiensQuery{Node: c.equal("Project")})
	if err != nil {
		return Response{}, err
	}
	rows := make([]row, len(liens.Items))
	for i, l := range liens.Items {
		rows[i] = row{"Id": idText(l.ID), "Name": l.JobID, "Job": l.JobID, "JobId": l.JobID, "Account": l.Account, "Project": l.Project, "User": l.User,
			"Machine": l.Machine, "Amount": l.Amount.String(), "Charged": l.Charged.String(), "StartTime": epoch(l.Created),
			"EndTime": epoch(l.Expires), "State": string(l.State)}
	}
	return c.rows(reservationFields, rows)
}

// reservationAllocationFields are what a lien holds on one allocation,
// with the lien's times.
var reservationAllocationFields = []string{"Reservation", "Id", "Account", "Amount", "StartTime", "EndTime"}

// queryReservationAllocations answers gbalance's join: a row for each
// allocation each active lien holds credits on.
func queryReservationAllocations(c *call) (Response, error) {
	if err := c.checkQuery(reservationAllocationFields); err != nil {
		return Response{}, err
	}
	liens, err := read[api.List[ledger.Lien]](c, http.MethodGet, api.PathLiens, api.LiensQuery{})
	if err != nil {
		return Response{}, err
	}
	var rows []row
	for _, l := range liens.Items {
		for _, h := range l.Holds {
			rows = append(rows, row{"Reservation": idText(l.ID), "Id": idText(h.Allocation), "Account": l.Account, "Amount": h.Amount.String(),
				"StartTime": epoch(l.Created), "EndTime": epoch(l.Expires)})
		}
	}
	return c.rows(reservationAllocationFields, rows)
}
