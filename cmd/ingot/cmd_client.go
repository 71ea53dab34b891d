package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/proto/auth"
	"github.com/ingot-hpc/ingot/proto/clients"
)

func clientCommands() []*cli.Command {
	keyOut := &cli.StringFlag{Name: "key-out", Usage: "write the new key to `FILE` (mode 0600) instead of printing it"}
	serverKey := serverKeyFlag()
	return []*cli.Command{{
		Name:  "client",
		Usage: "API clients and their HMAC keys (secrets are shown once and stored sealed)",
		Subcommands: []*cli.Command{
			{Name: "add", ArgsUsage: "NAME", Usage: "add a client with a first key", Action: clientAdd, Flags: []cli.Flag{
				&cli.StringFlag{Name: "role", Required: true, Usage: "admin, manager, scheduler or user"},
				&cli.StringSliceFlag{Name: "scope", Usage: "a manager's `NODE`, a scheduler's MACHINE, a user client's USER (repeatable)"},
				keyOut, serverKey}},
			{Name: "rotate", ArgsUsage: "NAME", Usage: "add a new key; the old ones work until revoked", Action: clientRotate, Flags: []cli.Flag{keyOut, serverKey}},
			{Name: "revoke", ArgsUsage: "NAME KEYID", Usage: "end a key at once, for good (asks on a terminal)", Action: clientRevoke, Flags: []cli.Flag{serverKey, yesFlag()}},
			{Name: "list", Usage: "list clients and their keys (never the secrets)", Action: clientList, Flags: []cli.Flag{serverKey}},
		},
	}}
}

// withClients runs fn on the bank's client registry: the database file's,
// or the server's (for an admin client).
func withClients(c *cli.Context, makesKeys bool, fn func(clientRegistry) error) error {
	return withBank(c, func(b bank) error {
		reg, err := b.Registry(makesKeys)
		if err != nil {
			return err
		}
		return fn(reg)
	})
}

func clientAdd(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	return withClients(c, true, func(reg clientRegistry) error {
		return giveKey(c, func() (clients.Client, auth.Key, error) {
			return reg.Add(c.Context, request(c), a[0], clients.Role(c.String("role")), c.StringSlice("scope"))
		})
	})
}

func clientRotate(c *cli.Context) error {
	a, err := args(c, "NAME")
	if err != nil {
		return err
	}
	return withClients(c, true, func(reg clientRegistry) error {
		return giveKey(c, func() (clients.Client, auth.Key, error) { return reg.Rotate(c.Context, request(c), a[0]) })
	})
}

// giveKey makes a new key and hands it over, once: into --key-out, or on
// standard output as the one line of a key file.
func giveKey(c *cli.Context, newKey func() (clients.Client, auth.Key, error)) error {
	path := c.String("key-out")
	if path == "" {
		cl, key, err := newKey()
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "client %s (%s): the key below is shown once; save it as a key file (INGOT_KEY_FILE)\n", cl.Name, cl.Role)
		_, err = c.App.Writer.Write(key.KeyFile())
		return err
	}
	cl, key, err := makeKeyFile(path, newKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "client %s (%s): key %s written to %s\n", cl.Name, cl.Role, key.ID, path)
	return nil
}

// makeKeyFile creates the key file at path (readable by its owner only,
// never over another file) before newKey makes the key, so that a path that
// cannot be written fails before anything is made; the file is removed if
// newKey fails.
func makeKeyFile(path string, newKey func() (clients.Client, auth.Key, error)) (clients.Client, auth.Key, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return clients.Client{}, auth.Key{}, fmt.Errorf("key file: %w", err)
	}
	cl, key, err := newKey()
	if err != nil {
		f.Close()
		os.Remove(path)
		return cl, key, err
	}
	_, err = f.Write(key.KeyFile())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return cl, key, fmt.Errorf("key file %s: %w (the key %s was made; revoke it)", path, err, key.ID)
	}
	return cl, key, nil
}

func clientRevoke(c *cli.Context) error {
	a, err := args(c, "NAME", "KEYID")
	if err != nil {
		return err
	}
	question := fmt.Sprintf("revoke key %s of client %s? It stops working at once, for good (`ingot client rotate %s` makes a new one).", a[1], a[0], a[0])
	if err := confirm(c, question); err != nil {
		return err
	}
	return withClients(c, false, func(reg clientRegistry) error {
		cl, err := reg.Revoke(c.Context, request(c), a[0], a[1])
		if err != nil {
			return err
		}
		return showClients(c, []clients.Client{cl})
	})
}

func clientList(c *cli.Context) error {
	return withClients(c, false, func(reg clientRegistry) error {
		list, err := reg.List(c.Context)
		if err != nil {
			return err
		}
		return showClients(c, list)
	})
}

func showClients(c *cli.Context, list []clients.Client) error {
	shown := make([]clients.Client, len(list))
	for i, cl := range list {
		shown[i] = cl.Public()
	}
	t := table{headers: []string{"Client", "Role", "Scope", "Key", "Created", "Revoked"}, data: shown}
	for _, cl := range shown {
		for _, k := range cl.Keys {
			revoked := "-"
			if !k.Revoked.IsZero() {
				revoked = localTime(k.Revoked)
			}
			t.add(cl.Name, string(cl.Role), strings.Join(cl.Scope, ","), k.ID, localTime(k.Created), revoked)
		}
	}
	return show(c, t)
}
