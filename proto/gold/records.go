package gold

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/proto/api"
)

// Gold's administrative objects, as gmkuser, gmkmachine, gmkproject,
// gmkaccount and their listing clients use them: a User is an ingot user,
// a Machine an ingot machine, a Project an ingot node (a top-level one is
// an account: Gold makes an account for each new project, account.autogen,
// and ingot's account is the project's own), ProjectUser a membership.
// Their values come from the request's assignments (Set), as Gold's
// clients send them; what ingot does not keep (a user's CommonName, a
// machine's Architecture...) is refused when set and answered empty when
// asked for.

// assigned checks that every Set is one of names, and returns the values.
func (c *call) assigned(names ...string) (map[string]string, error) {
	if len(c.Data) > 0 || len(c.Wheres) > 0 || len(c.Gets) > 0 {
		return nil, Errorf(CodeBadData, "%s %s takes Set elements and options, no Data, Where or Get", c.Object, c.Action)
	}
	v := map[string]string{}
	for _, s := range c.Sets {
		if !slices.Contains(names, s.Name) {
			return nil, Errorf(CodeBadData, "%s %s does not set %s; ingot keeps %s", c.Object, c.Action, s.Name, strings.Join(names, ", "))
		}
		v[s.Name] = s.Value
	}
	if v["Name"] == "" {
		return nil, Errorf(CodeBadData, "%s %s needs a Name", c.Object, c.Action)
	}
	return v, nil
}

// creation reads a Create's assignments, each one of sets, and its
// options, each one of options; an inactive record is refused.
func (c *call) creation(sets []string, options ...string) (map[string]string, error) {
	v, err := c.assigned(sets...)
	if err == nil {
		err = c.noOptions(options...)
	}
	if err == nil {
		err = active(v)
	}
	return v, err
}

// createRecord posts spec to the API's path and answers the record made.
func createRecord[T any](c *call, path string, spec any, rowOf func(T) Element) (Response, error) {
	x, err := change[T](c, path, spec)
	if err != nil {
		return Response{}, err
	}
	return created(c, rowOf(x)), nil
}

// noOptions refuses every option but those named.
func (c *call) noOptions(names ...string) error {
	for _, o := range c.Options {
		if !slices.Contains(names, o.Name) {
			return Errorf(CodeNotImplemented, "option %s of %s %s is not implemented", o.Name, c.Object, c.Action)
		}
	}
	return nil
}

// active reads Gold's Active assignment: only True is what ingot makes.
func active(v map[string]string) error {
	if a, ok := v["Active"]; ok && !strings.EqualFold(a, "True") {
		return Errorf(CodeNotImplemented, "creating an inactive %s is not implemented: create it, then deactivate it with ingot's command line", strings.ToLower(v["Name"]))
	}
	return nil
}

func createUser(c *call) (Response, error) {
	v, err := c.creation([]string{"Name", "Description", "DefaultProject", "Active"})
	if err != nil {
		return Response{}, err
	}
	return createRecord(c, api.PathUsers, api.UserRequest{Name: v["Name"], Description: v["Description"], DefaultProject: v["DefaultProject"]}, userRow)
}

func createMachine(c *call) (Response, error) {
	v, err := c.creation([]string{"Name", "Description", "Active"})
	if err != nil {
		return Response{}, err
	}
	return createRecord(c, api.PathMachines, api.MachineRequest{Name: v["Name"], Description: v["Description"]}, machineRow)
}

// createProject makes the node: a top-level name is an account (Gold's
// project with the account account.autogen makes for it), a dotted one a
// project under its account. AccountUsers and CreateAccount change
// nothing: ingot's members are the project's own (ProjectUser Create),
// and its account is always there.
func createProject(c *call) (Response, error) {
	v, err := c.creation([]string{"Name", "Description", "Active"}, "AccountUsers", "CreateAccount")
	if err != nil {
		return Response{}, err
	}
	return createRecord(c, api.PathNodes, api.NodeRequest{Name: v["Name"], Description: v["Description"]}, projectRow)
}

// createProjectUser makes a user a member of a project (Active False is
// not a membership ingot has).
func createProjectUser(c *call) (Response, error) {
	v, err := c.creation([]string{"Project", "Name", "Active", "Admin"})
	if err != nil {
		return Response{}, err
	}
	role := ledger.RoleMember
	if strings.EqualFold(v["Admin"], "True") {
		role = ledger.RoleManager
	}
	u, err := change[ledger.User](c, api.PathUserModify, api.Modify[ledger.UserChange]{Name: v["Name"],
		Change: ledger.UserChange{Add: []ledger.Membership{{Node: v["Project"], Role: role}}}})
	if err != nil {
		return Response{}, err
	}
	return created(c, record(c.Object, field("Project", v["Project"]), field("Name", u.Name), field("Active", "True"), field("Admin", gbool(role == ledger.RoleManager)))), nil
}

// createProjectMachine accepts a machine the bank has: an ingot project
// runs on every machine (an allocation may be limited to one), so the
// association is what it already is.
func createProjectMachine(c *call) (Response, error) {
	v, err := c.creation([]string{"Project", "Name", "Active"})
	if err != nil {
		return Response{}, err
	}
	if _, err := read[ledger.Node](c, http.MethodGet, api.PathNode, api.NameQuery{Name: v["Project"]}); err != nil {
		return Response{}, err
	}
	if err := c.knownMachine(v["Name"]); err != nil {
		return Response{}, err
	}
	return created(c, record(c.Object, field("Project", v["Project"]), field("Name", v["Name"]), field("Active", "True"))), nil
}

// knownMachine refuses a machine the bank does not have.
func (c *call) knownMachine(name string) error {
	ms, err := read[api.List[ledger.Machine]](c, http.MethodGet, api.PathMachines, api.NoQuery{})
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(ms.Items, func(m ledger.Machine) bool { return m.Name == name }) {
		return Errorf(CodeState, "Machine %s does not exist", ledger.Excerpt(name))
	}
	return nil
}

// createAccount answers gmkaccount: an ingot project charges one account,
// its top-level node, which gmkproject made. So the account of Project is
// made if it is not there yet (named as the project: ingot's accounts
// are their projects' names, Gold's Name is kept as its description), and
// answered as it is if it is. User and Machine must be ANY or MEMBERS:
// who may charge an ingot account is its projects' members.
func createAccount(c *call) (Response, error) {
	v, err := c.assigned("Name", "Description")
	if err != nil {
		return Response{}, err
	}
	var project string
	for _, o := range c.Options {
		switch {
		case o.Op != "":
			return Response{}, Errorf(CodeNotImplemented, "Account Create with %s %s %s is not implemented", o.Name, o.Op, ledger.Excerpt(o.Value))
		case o.Name == "Project" && project == "":
			project = o.Value
		case (o.Name == "User" || o.Name == "Machine") && (o.Value == "ANY" || o.Value == "MEMBERS"):
		default:
			return Response{}, Errorf(CodeNotImplemented, "Account Create with %s %s is not implemented: an ingot account is charged by its projects' members on any machine", o.Name, ledger.Excerpt(o.Value))
		}
	}
	if project == "" || project == "ANY" || project == "NONE" || strings.Contains(project, ".") {
		return Response{}, Errorf(CodeBadData, "Account Create needs the Project whose account it is, a top-level project")
	}
	n, err := read[ledger.Node](c, http.MethodGet, api.PathNode, api.NameQuery{Name: project})
	if err != nil {
		if api.FromError(err).Code != api.CodeNotFound {
			return Response{}, err
		}
		description := strings.TrimSpace(v["Name"] + " " + v["Description"])
		if n, err = change[ledger.Node](c, api.PathNodes, api.NodeRequest{Name: project, Description: description}); err != nil {
			return Response{}, err
		}
	}
	id, err := c.accountID(n.Name)
	if err != nil {
		return Response{}, err
	}
	resp := created(c, record("Account", field("Id", id), field("Name", n.Name), field("Description", n.Description)))
	resp.Message = fmt.Sprintf("Successfully created 1 account: %s, the account of project %s", n.Name, project)
	return resp, nil
}

// created answers a Create with the record made.
func created(c *call, r Element) Response {
	r.Name = c.Object
	return Response{Code: CodeSuccess, Message: "Successfully created 1 " + strings.ToLower(c.Object), Count: "1", Data: []Element{r}}
}

func gbool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// The fields of each object's rows. Special is Gold's mark of its
// pseudo-users and pseudo-projects (ANY, MEMBERS...), which ingot has
// not: every row is False.
var (
	userFields    = []string{"Name", "Active", "CommonName", "PhoneNumber", "EmailAddress", "DefaultProject", "Description", "Special", "Projects"}
	machineFields = []string{"Name", "Active", "Architecture", "OperatingSystem", "Organization", "Description", "Special"}
	projectFields = []string{"Name", "Active", "Organization", "Description", "Special", "Users", "Machines"}
)

func userRow(u ledger.User) Element {
	projects := make([]string, len(u.Memberships))
	for i, m := range u.Memberships {
		projects[i] = m.Node
	}
	return record("User", field("Name", u.Name), field("Active", gbool(u.Active)), field("DefaultProject", u.DefaultProject),
		field("Description", u.Description), field("Special", "False"), field("Projects", strings.Join(projects, ",")))
}

func machineRow(m ledger.Machine) Element {
	return record("Machine", field("Name", m.Name), field("Active", gbool(m.Active)), field("Description", m.Description), field("Special", "False"))
}

func projectRow(n ledger.Node) Element {
	return record("Project", field("Name", n.Name), field("Active", gbool(n.Active)), field("Description", n.Description), field("Special", "False"))
}

// toRow makes a record a query's row; the fields it lacks are empty.
func toRow(e Element) row {
	r := row{}
	for _, f := range e.Children {
		r[f.Name] = f.Text
	}
	return r
}

func queryUsers(c *call) (Response, error) {
	return queryRecords(c, userFields, api.PathUsers, userRow)
}

func queryMachines(c *call) (Response, error) {
	return queryRecords(c, machineFields, api.PathMachines, machineRow)
}

// queryRecords answers the records the API lists at path, each made a
// row by rowOf.
func queryRecords[T any](c *call, fields []string, path string, rowOf func(T) Element) (Response, error) {
	if err := c.checkQuery(fields); err != nil {
		return Response{}, err
	}
	list, err := read[api.List[T]](c, http.MethodGet, path, api.NoQuery{})
	if err != nil {
		return Response{}, err
	}
	rows := make([]row, len(list.Items))
	for i, x := range list.Items {
		rows[i] = toRow(rowOf(x))
	}
	return c.rows(fields, rows)
}

// queryProjects answers the nodes the client reads, each with its members
// (Users) and, as every project runs on every machine, Machines empty.
func queryProjects(c *call) (Response, error) {
	if err := c.checkQuery(projectFields); err != nil {
		return Response{}, err
	}
	nodes, err := read[api.List[ledger.Node]](c, http.MethodGet, api.PathNodes, api.NodesQuery{})
	if err != nil {
		return Response{}, err
	}
	members := map[string][]string{}
	if slices.ContainsFunc(c.Gets, func(g Param) bool { return g.Name == "Users" }) {
		users, err := read[api.List[ledger.User]](c, http.MethodGet, api.PathUsers, api.NoQuery{})
		if err != nil {
			return Response{}, err
		}
		for _, u := range users.Items {
			for _, m := range u.Memberships {
				members[m.Node] = append(members[m.Node], u.Name)
			}
		}
	}
	rows := make([]row, len(nodes.Items))
	for i, n := range nodes.Items {
		rows[i] = toRow(projectRow(n))
		rows[i]["Users"] = strings.Join(members[n.Name], ",")
	}
	return c.rows(projectFields, rows)
}

var projectUserFields = []string{"Project", "Name", "Active", "Admin"}

// queryProjectUsers answers the memberships of the users the client reads.
func queryProjectUsers(c *call) (Response, error) {
	if err := c.checkQuery(projectUserFields); err != nil {
		return Response{}, err
	}
	users, err := read[api.List[ledger.User]](c, http.MethodGet, api.PathUsers, api.NoQuery{})
	if err != nil {
		return Response{}, err
	}
	var rows []row
	for _, u := range users.Items {
		for _, m := range u.Memberships {
			rows = append(rows, row{"Project": m.Node, "Name": u.Name, "Active": gbool(u.Active), "Admin": gbool(m.Role == ledger.RoleManager)})
		}
	}
	return c.rows(projectUserFields, rows)
}

// The members of an account, as glsaccount and gbalance list them: its
// projects (every node of its subtree), its users (the members of those
// nodes; ANY for a node that admits any user), and its machines (ANY:
// an ingot account is charged on every machine, an allocation limited to
// one being a term of the allocation). Access True is membership; ingot
// has no exclusions.
var (
	accountMemberFields  = []string{"Account", "Name", "Access", "Active"}
	projectMachineFields = []string{"Project", "Name", "Active"}
)

func queryAccountProjects(c *call) (Response, error) {
	return c.accountMembers(func(n ledger.Node, _ []ledger.User) []string { return []string{n.Name} })
}

func queryAccountUsers(c *call) (Response, error) {
	return c.accountMembers(func(n ledger.Node, users []ledger.User) []string {
		var names []string
		if n.AnyUser {
			names = append(names, "ANY")
		}
		for _, u := range users {
			if slices.ContainsFunc(u.Memberships, func(m ledger.Membership) bool { return m.Node == n.Name }) {
				names = append(names, u.Name)
			}
		}
		return names
	})
}

func queryAccountMachines(c *call) (Response, error) {
	return c.accountMembers(func(n ledger.Node, _ []ledger.User) []string {
		if n.IsAccount() {
			return []string{"ANY"}
		}
		return nil
	})
}

// accountMembers answers a row for each member that members finds in
// each node the client reads, once for each account.
func (c *call) accountMembers(members func(ledger.Node, []ledger.User) []string) (Response, error) {
	if err := c.checkQuery(accountMemberFields); err != nil {
		return Response{}, err
	}
	nodes, err := read[api.List[ledger.Node]](c, http.MethodGet, api.PathNodes, api.NodesQuery{})
	if err != nil {
		return Response{}, err
	}
	users, err := read[api.List[ledger.User]](c, http.MethodGet, api.PathUsers, api.NoQuery{})
	if err != nil {
		return Response{}, err
	}
	var rows []row
	seen := map[[2]string]bool{}
	for _, n := range nodes.Items {
		for _, name := range members(n, users.Items) {
			key := [2]string{n.Account(), name}
			if !seen[key] {
				seen[key] = true
				rows = append(rows, row{"Account": n.Account(), "Name": name, "Access": "True", "Active": gbool(n.Active)})
			}
		}
	}
	return c.rows(accountMemberFields, rows)
}

// queryProjectMachines answers no rows: an ingot project runs on every
// machine, so none is a member of it in Gold's sense.
func queryProjectMachines(c *call) (Response, error) {
	if err := c.checkQuery(projectMachineFields); err != nil {
		return Response{}, err
	}
	return c.rows(projectMachineFields, nil)
}
