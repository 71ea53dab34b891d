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
				&cli.StringFlag{Name: "role", Usage: "admin, manager, scheduler or user (required)"},
				&cli.StringSliceFlag{Name: "scope", Usage: "a manager's `NODE`, a scheduler's MACHINE, a user client's USER (repeatable)"},
				&cli.BoolFlag{Name: "gold", Usage: "its keys also sign Gold's protocol (serve --gold-listen): print each in the forms of Gold's auth_key file and Maui's CSKEY (docs/gold.md)"},
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
	if c.String("role") == "" {
		return usageError{"ingot client add needs --role: admin, manager, scheduler or user"}
	}
	return withClients(c, true, func(reg clientRegistry) error {
		return giveKey(c, func() (clients.Client, auth.Key, error) {
			return reg.Add(c.Context, request(c), clients.Spec{Name: a[0], Role: clients.Role(c.String("role")), Scope: c.StringSlice("scope"), Gold: c.Bool("gold")})
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
// standard output as the one line of a key file. A Gold client's key is
// also printed as Gold's and Maui's configurations hold it.
func giveKey(c *cli.Context, newKey func() (clients.Client, auth.Key, error)) error {
	path := c.String("key-out")
	if flagBool(c, "json") {
		return giveKeyJSON(c, path, newKey)
	}
	if path == "" {
		cl, key, err := newKey()
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "client %s (%s): the key below is shown once; save it as a key file (INGOT_KEY_FILE)\n", cl.Name, cl.Role)
		if cl.Gold {
			fmt.Fprintln(c.App.Writer, "# ingot's key file (INGOT_KEY_FILE):")
		}
		if _, err = c.App.Writer.Write(key.KeyFile()); err != nil {
			return err
		}
		return printGoldKey(c, cl, key)
	}
	cl, key, err := makeKeyFile(path, newKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "client %s (%s): key %s written to %s\n", cl.Name, cl.Role, key.ID, path)
	return printGoldKey(c, cl, key)
}

// keyGiven is a new key as --json prints it: the key file's line when no
// --key-out holds it, and a Gold client's secret as Gold's and Maui's
// configurations hold it.
type keyGiven struct {
	Client     clients.Client `json:"client"`
	KeyID      string         `json:"key_id"`
	KeyFile    string         `json:"key_file,omitempty"`
	Key        string         `json:"key,omitempty"`
	GoldSecret string         `json:"gold_secret,omitempty"`
}

func giveKeyJSON(c *cli.Context, path string, newKey func() (clients.Client, auth.Key, error)) error {
	var (
		cl  clients.Client
		key auth.Key
		err error
	)
	if path == "" {
		cl, key, err = newKey()
	} else {
		cl, key, err = makeKeyFile(path, newKey)
	}
	if err != nil {
		return err
	}
	given := keyGiven{Client: cl, KeyID: key.ID, KeyFile: path}
	if path == "" {
		given.Key = strings.TrimSpace(string(key.KeyFile()))
	}
	if cl.Gold {
		given.GoldSecret = key.SecretText()
	}
	return writeJSON(c.App.Writer, given)
}

// printGoldKey prints a Gold client's key as Gold's auth_key file and
// Maui's maui.cfg hold it: the secret's text, which is the HMAC key.
func printGoldKey(c *cli.Context, cl clients.Client, key auth.Key) error {
	if !cl.Gold {
		return nil
	}
	_, err := fmt.Fprintf(c.App.Writer, "# Gold's auth_key file (one line, mode 600), for gbalance, gcharge and the others:\n%s\n"+
		"# Maui's maui.cfg, beside AMCFG[bank] TYPE=GOLD:\nCLIENTCFG[AM:bank] CSKEY=%s\n", key.SecretText(), key.SecretText())
	return err
}

// makeKeyFile creates the key file at path (readable by its owner only,
// never over another file) before newKey makes the key, so that a path that
// cannot be written fails before anything is made; the file is removed if
// newKey fails.
func makeKeyFile[T any](path string, newKey func() (T, auth.Key, error)) (T, auth.Key, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		var zero T
		return zero, auth.Key{}, fmt.Errorf("key file: %w", err)
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
	t := table{headers: []string{"Client", "Role", "Scope", "Gold", "Key", "Created", "Revoked"}, data: shown}
	for _, cl := range shown {
		for _, k := range cl.Keys {
			revoked := "-"
			if !k.Revoked.IsZero() {
				revoked = localTime(k.Revoked)
			}
			t.add(cl.Name, string(cl.Role), strings.Join(cl.Scope, ","), yesNo(cl.Gold), k.ID, localTime(k.Created), revoked)
		}
	}
	return show(c, t)
}
