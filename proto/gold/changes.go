package gold

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
)

// Gold's Modify and Delete select what they change with Where conditions
// (gchres -r 1 sends Where Id=1) and say the change with Set elements:
// here one thing, named by an equality on one of the fields given, and
// only the Sets ingot can do.

// selected is the value of the one Where, an equality on one of names,
// and which name it is on; the request may have no other Where, Get,
// Data or option.
func (c *call) selected(names ...string) (name, value string, err error) {
	if len(c.Wheres) != 1 || !slices.Contains(names, c.Wheres[0].Name) || c.Wheres[0].Op != "" && !strings.EqualFold(c.Wheres[0].Op, "EQ") {
		return "", "", Errorf(CodeBadData, "%s %s selects one %s with one Where, an equality on %s", c.Object, c.Action, strings.ToLower(c.Object), strings.Join(names, " or "))
	}
	if len(c.Gets) > 0 || len(c.Data) > 0 || len(c.Options) > 0 {
		return "", "", Errorf(CodeNotImplemented, "%s %s with Get, Data or options is not implemented", c.Object, c.Action)
	}
	return c.Wheres[0].Name, c.Wheres[0].Value, nil
}

// sets are the Set elements, each one of names.
func (c *call) sets(names ...string) (map[string]string, error) {
	v := map[string]string{}
	for _, s := range c.Sets {
		if !slices.Contains(names, s.Name) {
			return nil, Errorf(CodeNotImplemented, "%s %s of %s is not implemented; it changes %s", c.Object, c.Action, s.Name, strings.Join(names, ", "))
		}
		v[s.Name] = s.Value
	}
	return v, nil
}

// reservation is the open lien a request selects, by its Id or by its
// Name (the job's id).
func (c *call) reservation() (ledger.Lien, error) {
	name, value, err := c.selected("Id", "Name")
	if err != nil {
		return ledger.Lien{}, err
	}
	liens, err := read[api.List[ledger.Lien]](c, http.MethodGet, api.PathLiens, api.LiensQuery{})
	if err != nil {
		return ledger.Lien{}, err
	}
	var found []ledger.Lien
	for _, l := range liens.Items {
		if name == "Id" && idText(l.ID) == value || name == "Name" && l.JobID == value {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 0:
		return ledger.Lien{}, Errorf(CodeState, "Reservation %s %s does not exist", name, ledger.Excerpt(value))
	case 1:
		return found[0], nil
	}
	return ledger.Lien{}, Errorf(CodeBadData, "jobs %s run on several machines: name the reservation by its Id", ledger.Excerpt(value))
}

// modifyReservation moves a lien's end (gchres -e): ingot's lien starts
// when it is placed, and has no description.
func modifyReservation(c *call) (Response, error) {
	l, err := c.reservation()
	if err != nil {
		return Response{}, err
	}
	v, err := c.sets("EndTime")
	if err != nil {
		return Response{}, err
	}
	if v["EndTime"] == "" {
		return Response{}, Errorf(CodeBadData, "Reservation Modify needs EndTime")
	}
	end, err := epochTime("EndTime", v["EndTime"])
	if err != nil {
		return Response{}, err
	}
	changed, err := change[ledger.Lien](c, api.PathLienModify, api.LienModifyRequest{Job: lien.Job{Machine: l.Machine, ID: l.JobID}, End: end})
	if err != nil {
		return Response{}, err
	}
	return Response{Code: CodeSuccess, Message: "Successfully modified 1 reservation", Count: "1",
		Data: []Element{record("Reservation", field("Id", idText(changed.ID)), field("Name", changed.JobID), field("EndTime", epoch(changed.Expires)))}}, nil
}

// deleteReservation releases a lien (grmres).
func deleteReservation(c *call) (Response, error) {
	l, err := c.reservation()
	if err != nil {
		return Response{}, err
	}
	if err := c.noSets(); err != nil {
		return Response{}, err
	}
	released, err := change[ledger.Lien](c, api.PathRelease, api.ReleaseRequest{Machine: l.Machine, ID: l.JobID})
	if err != nil {
		return Response{}, err
	}
	return Response{Code: CodeSuccess, Message: "Successfully deleted 1 reservation", Count: "1",
		Data: []Element{record("Reservation", field("Id", idText(released.ID)), field("Name", released.JobID))}}, nil
}

// modifyAllocation changes an allocation's credit limit (gchalloc -L); its
// dates are fixed in ingot, where a transfer keeps them.
func modifyAllocation(c *call) (Response, error) {
	_, value, err := c.selected("Id")
	if err != nil {
		return Response{}, err
	}
	v, err := c.sets("CreditLimit")
	if err != nil {
		return Response{}, err
	}
	limit, err := ledger.ParseCreditLimit(v["CreditLimit"], maxPlaces)
	if err != nil {
		return Response{}, Errorf(CodeBadData, "CreditLimit: %v", err)
	}
	id, err := wholeNumber("Id", value)
	if err != nil {
		return Response{}, err
	}
	a, err := change[ledger.Allocation](c, api.PathAllocationModify, api.AllocationModifyRequest{Allocation: uint64(id), Change: ledger.AllocationChange{CreditLimit: &limit}})
	if err != nil {
		return Response{}, err
	}
	return Response{Code: CodeSuccess, Message: "Successfully modified 1 allocation", Count: "1",
		Data: []Element{record("Allocation", field("Id", idText(a.ID)), field("CreditLimit", a.CreditLimit.String()))}}, nil
}

// epochTime reads a time in epoch seconds.
func epochTime(name, v string) (time.Time, error) {
	n, err := wholeNumber(name, v)
	return time.Unix(n, 0).UTC(), err
}

// activeSet reads a Set Active: nil when not set.
func activeSet(v map[string]string) (*bool, error) {
	a, ok := v["Active"]
	if !ok {
		return nil, nil
	}
	switch strings.ToLower(a) {
	case "true":
		return new(true), nil
	case "false":
		return new(false), nil
	}
	return nil, Errorf(CodeBadData, "Active %s is not True or False", ledger.Excerpt(a))
}

// textSet is a Set of text: nil when not set.
func textSet(v map[string]string, name string) *string {
	if t, ok := v[name]; ok {
		return &t
	}
	return nil
}

// modifyUser changes a user (gchuser): Active, DefaultProject,
// Description; what ingot does not keep is refused.
func modifyUser(c *call) (Response, error) {
	v, err := c.sets("Active", "DefaultProject", "Description")
	if err != nil {
		return Response{}, err
	}
	ch := ledger.UserChange{Description: textSet(v, "Description"), DefaultProject: textSet(v, "DefaultProject")}
	if ch.Active, err = activeSet(v); err != nil {
		return Response{}, err
	}
	return changeNamed(c, api.PathUserModify, ch, userRow, modified)
}

// deleteUser deactivates a user (grmuser): ingot deletes nothing, so that
// its journal keeps naming what it names.
func deleteUser(c *call) (Response, error) {
	if err := c.noSets(); err != nil {
		return Response{}, err
	}
	return changeNamed(c, api.PathUserModify, ledger.UserChange{Active: new(false)}, userRow, deleted)
}

// modifyMachine changes a machine (gchmachine): Active, Description.
func modifyMachine(c *call) (Response, error) {
	v, err := c.sets("Active", "Description")
	if err != nil {
		return Response{}, err
	}
	ch := ledger.MachineChange{Description: textSet(v, "Description")}
	if ch.Active, err = activeSet(v); err != nil {
		return Response{}, err
	}
	return changeNamed(c, api.PathMachineModify, ch, machineRow, modified)
}

// deleteMachine deactivates a machine (grmmachine).
func deleteMachine(c *call) (Response, error) {
	if err := c.noSets(); err != nil {
		return Response{}, err
	}
	return changeNamed(c, api.PathMachineModify, ledger.MachineChange{Active: new(false)}, machineRow, deleted)
}

// changeNamed makes change ch to the record a request selects by Name,
// at the API's path, and answers the record as it is then.
func changeNamed[C, T any](c *call, path string, ch C, rowOf func(T) Element, answer func(*call, Element) Response) (Response, error) {
	_, name, err := c.selected("Name")
	if err != nil {
		return Response{}, err
	}
	x, err := change[T](c, path, api.Modify[C]{Name: name, Change: ch})
	if err != nil {
		return Response{}, err
	}
	return answer(c, rowOf(x)), nil
}

// noSets refuses a Set in a Delete.
func (c *call) noSets() error {
	if len(c.Sets) > 0 {
		return Errorf(CodeBadData, "a Delete takes no Set")
	}
	return nil
}

// modifyNode changes a project (gchproject, selected by Name) or an
// account (gchaccount, by Id): its Description, and Active, which
// deactivates or reactivates it with its subtree.
func modifyNode(c *call) (Response, error) {
	name, err := c.nodeSelected()
	if err != nil {
		return Response{}, err
	}
	v, err := c.sets("Active", "Description")
	if err != nil {
		return Response{}, err
	}
	active, err := activeSet(v)
	if err != nil {
		return Response{}, err
	}
	if len(v) == 0 {
		return Response{}, Errorf(CodeBadData, "%s Modify changes nothing: set Active or Description", c.Object)
	}
	var n ledger.Node
	if d := textSet(v, "Description"); d != nil {
		if n, err = change[ledger.Node](c, api.PathNodeModify, api.Modify[ledger.NodeChange]{Name: name, Change: ledger.NodeChange{Description: d}}); err != nil {
			return Response{}, err
		}
	}
	if active != nil {
		path := map[bool]string{true: api.PathNodeReactivate, false: api.PathNodeDeactivate}[*active]
		if n, err = change[ledger.Node](c, path, api.NameRequest{Name: name}); err != nil {
			return Response{}, err
		}
	}
	return modified(c, projectRow(n)), nil
}

// deleteNode deactivates a project or an account with its subtree
// (grmproject, grmaccount).
func deleteNode(c *call) (Response, error) {
	name, err := c.nodeSelected()
	if err != nil {
		return Response{}, err
	}
	if err := c.noSets(); err != nil {
		return Response{}, err
	}
	n, err := change[ledger.Node](c, api.PathNodeDeactivate, api.NameRequest{Name: name})
	if err != nil {
		return Response{}, err
	}
	return deleted(c, projectRow(n)), nil
}

// nodeSelected is the node a Project (by Name) or an Account (by Id, a
// number or a name) request selects.
func (c *call) nodeSelected() (string, error) {
	if c.Object == "Account" {
		_, id, err := c.selected("Id")
		if err != nil {
			return "", err
		}
		return c.accountName(id)
	}
	_, name, err := c.selected("Name")
	return name, err
}

// modified and deleted answer a Modify and a Delete with the record as it
// is now.
func modified(c *call, r Element) Response {
	resp := created(c, r)
	resp.Message = "Successfully modified 1 " + strings.ToLower(c.Object)
	return resp
}

func deleted(c *call, r Element) Response {
	resp := created(c, r)
	resp.Message = "Successfully deleted 1 " + strings.ToLower(c.Object) + " (deactivated: ingot deletes nothing)"
	return resp
}
