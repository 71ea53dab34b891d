package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/digest"
	"github.com/ingot-hpc/ingot/ledger"
)

func peopleCommands() []*cli.Command {
	userFlags := []cli.Flag{
		descriptionFlag("the user (user list shows it)"),
		&cli.StringFlag{Name: "default-project", Usage: "project charged when a job names none"},
		&cli.StringSliceFlag{Name: "member", Usage: "make a member of `NODE` (repeatable)"},
		&cli.StringSliceFlag{Name: "manager", Usage: "make a manager of `NODE` (repeatable)"},
	}
	machineFlags := []cli.Flag{
		descriptionFlag("the machine (machine list shows it)"),
		&cli.Int64Flag{Name: "cores", Usage: "cores per node"},
		&cli.Int64Flag{Name: "memory-mb", Usage: "memory per node, MB"},
		&cli.Int64Flag{Name: "gpus", Usage: "GPUs per node"},
	}
	return []*cli.Command{
		{
			Name:  "user",
			Usage: "add, modify and list users",
			Subcommands: []*cli.Command{
				{Name: "add", ArgsUsage: "NAME", Usage: "add a user", Flags: userFlags, Action: userAdd},
				{Name: "modify", ArgsUsage: "NAME", Usage: "change a user", Action: userModify, Flags: append(userFlags,
					&cli.StringSliceFlag{Name: "remove", Usage: "end the membership in `NODE` (repeatable)"},
					&cli.BoolFlag{Name: "active", Usage: "--active=false deactivates the user (asks on a terminal), --active reactivates"},
					&cli.StringFlag{Name: "email", Usage: "send the user's digests (ingot notify) to `ADDRESS` (\"\" clears it)"},
					&cli.StringFlag{Name: "webhook", Usage: "also post the user's digests to `URL` (a Slack or Mattermost incoming webhook; \"\" clears it)"},
					&cli.StringFlag{Name: "notify", Usage: "on or off: whether the user gets digests at all (`off` opts out)"},
					yesFlag(),
				)},
				{Name: "list", Usage: "list users", Action: userList},
				{Name: "contacts", Usage: "where the users' digests go (ingot notify; set with user modify --email, --webhook, --notify)", Action: contactList},
			},
		},
		{
			Name:  "machine",
			Usage: "add, modify and list machines (clusters)",
			Subcommands: []*cli.Command{
				{Name: "add", ArgsUsage: "NAME", Usage: "add a machine", Flags: machineFlags, Action: machineAdd},
				{Name: "modify", ArgsUsage: "NAME", Usage: "change a machine", Action: machineModify, Flags: append(machineFlags,
					&cli.BoolFlag{Name: "active", Usage: "--active=false deactivates the machine (asks on a terminal), --active reactivates"},
					yesFlag(),
				)},
				{Name: "list", Usage: "list machines", Action: machineList},
			},
		},
	}
}

func memberships(c *cli.Context) []ledger.Membership {
	var out []ledger.Membership
	for _, n := range c.StringSlice("member") {
		out = append(out, ledger.Membership{Node: n, Role: ledger.RoleMember})
	}
	for _, n := range c.StringSlice("manager") {
		out = append(out, ledger.Membership{Node: n, Role: ledger.RoleManager})
	}
	return out
}

func userAdd(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	spec := ledger.UserSpec{Name: a[0], Description: c.String("description"), DefaultProject: c.String("default-project"), Memberships: memberships(c)}
	return withBank(c, func(b bank) error {
		u, err := b.AddUser(c.Context, request(c), spec)
		if err != nil {
			return err
		}
		return showUsers(c, []ledger.User{u})
	})
}

func userModify(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	change := ledger.UserChange{Add: memberships(c), Remove: c.StringSlice("remove")}
	if c.IsSet("description") {
		change.Description = ptr(c.String("description"))
	}
	if c.IsSet("default-project") {
		change.DefaultProject = ptr(c.String("default-project"))
	}
	if c.IsSet("active") {
		change.Active = ptr(c.Bool("active"))
	}
	if err := confirmDeactivation(c, "user", a[0], "Their jobs are refused"); err != nil {
		return err
	}
	contact, err := contactChange(c)
	if err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		if contact != nil {
			req := request(c)
			if userChanged(c) {
				req.ID += "/contact" // the user's change is the command's request id
			}
			ct, err := b.SetContact(c.Context, req, a[0], *contact)
			if err != nil {
				return err
			}
			if !userChanged(c) {
				return showContacts(c, []digest.Contact{ct})
			}
		}
		u, err := b.ModifyUser(c.Context, request(c), a[0], change)
		if err != nil {
			return err
		}
		return showUsers(c, []ledger.User{u})
	})
}

// userChanged reports whether user modify changes the user itself, not
// only where its digests go.
func userChanged(c *cli.Context) bool {
	for _, f := range []string{"description", "default-project", "member", "manager", "remove", "active"} {
		if c.IsSet(f) {
			return true
		}
	}
	return false
}

// contactChange is the change of user modify's --email, --webhook and
// --notify, nil without them.
func contactChange(c *cli.Context) (*digest.ContactChange, error) {
	var ch digest.ContactChange
	if c.IsSet("email") {
		ch.Email = ptr(c.String("email"))
	}
	if c.IsSet("webhook") {
		ch.Webhook = ptr(c.String("webhook"))
	}
	if c.IsSet("notify") {
		switch c.String("notify") {
		case "on":
			ch.Off = ptr(false)
		case "off":
			ch.Off = ptr(true)
		default:
			return nil, usageError{fmt.Sprintf("--notify %q: on or off", c.String("notify"))}
		}
	}
	if ch == (digest.ContactChange{}) {
		return nil, nil
	}
	return &ch, nil
}

func contactList(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		cs, err := b.Contacts(c.Context)
		if err != nil {
			return err
		}
		return showContacts(c, cs)
	})
}

func showContacts(c *cli.Context, cs []digest.Contact) error {
	t := table{headers: []string{"User", "Notify", "Email", "Webhook"}, data: orEmpty(cs)}
	for _, ct := range cs {
		t.add(ct.User, map[bool]string{false: "on", true: "off"}[ct.Off], ct.Email, ct.Webhook)
	}
	return show(c, t)
}

func userList(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		users, err := b.Users(c.Context)
		if err != nil {
			return err
		}
		return showUsers(c, users)
	})
}

func showUsers(c *cli.Context, users []ledger.User) error {
	t := table{headers: []string{"Name", "Active", "DefaultProject", "Memberships", "Description"}, data: orEmpty(users)}
	for _, u := range users {
		var ms []string
		for _, m := range u.Memberships {
			ms = append(ms, fmt.Sprintf("%s(%s)", m.Node, m.Role))
		}
		t.add(u.Name, yesNo(u.Active), u.DefaultProject, strings.Join(ms, ","), u.Description)
	}
	return show(c, t)
}

func machineAdd(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	spec := ledger.MachineSpec{Name: a[0], Description: c.String("description"), Shape: ledger.Shape{Cores: c.Int64("cores"), MemoryMB: c.Int64("memory-mb"), GPUs: c.Int64("gpus")}}
	return withBank(c, func(b bank) error {
		m, err := b.AddMachine(c.Context, request(c), spec)
		if err != nil {
			return err
		}
		return showMachines(c, []ledger.Machine{m})
	})
}

func machineModify(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	if err := confirmDeactivation(c, "machine", a[0], "Jobs on it are refused"); err != nil {
		return err
	}
	return withBank(c, func(b bank) error {
		var change ledger.MachineChange
		if c.IsSet("description") {
			change.Description = ptr(c.String("description"))
		}
		if c.IsSet("active") {
			change.Active = ptr(c.Bool("active"))
		}
		for flag, field := range map[string]**int64{"cores": &change.Cores, "memory-mb": &change.MemoryMB, "gpus": &change.GPUs} {
			if c.IsSet(flag) {
				*field = ptr(c.Int64(flag))
			}
		}
		m, err := b.ModifyMachine(c.Context, request(c), a[0], change)
		if err != nil {
			return err
		}
		return showMachines(c, []ledger.Machine{m})
	})
}

func machineList(c *cli.Context) error {
	return withBank(c, func(b bank) error {
		ms, err := b.Machines(c.Context)
		if err != nil {
			return err
		}
		return showMachines(c, ms)
	})
}

func showMachines(c *cli.Context, ms []ledger.Machine) error {
	t := table{headers: []string{"Name", "Active", "Cores", "MemoryMB", "GPUs", "Description"}, data: orEmpty(ms)}
	for _, m := range ms {
		t.add(m.Name, yesNo(m.Active), fmt.Sprint(m.Shape.Cores), fmt.Sprint(m.Shape.MemoryMB), fmt.Sprint(m.Shape.GPUs), m.Description)
	}
	return show(c, t)
}

// confirmDeactivation asks before `ingot KIND modify NAME --active=false`
// deactivates a user or machine; refused says what it stops.
func confirmDeactivation(c *cli.Context, kind, name, refused string) error {
	if !c.IsSet("active") || c.Bool("active") {
		return nil
	}
	return confirm(c, fmt.Sprintf("deactivate %s %s? %s until `ingot %s modify %s --active`.", kind, name, refused, kind, name))
}

func ptr[T any](v T) *T { return &v }
