package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/proto/web"
)

func webCommands() []*cli.Command {
	return []*cli.Command{{
		Name:  "web-login",
		Usage: "print a one-time link that signs a browser in to the server's web page as you (through --server)",
		Description: "Asks the server (--server, with your key, --use-munge, or unix:PATH of its socket) for a link to its\n" +
			"web page. Opened within " + web.LinkLifetime.String() + ", once, it signs the browser in for " + web.SessionLifetime.String() + " with your rights: a user sees\n" +
			"the projects they are a member or manager of, a manager the subtrees they manage, an admin everything.\n" +
			"The link alone is printed on standard output, when it expires on standard error. Keep it to yourself\n" +
			"until it is used: whoever opens it first is signed in as you.",
		Action: webLogin,
	}}
}

// webLogin asks the server for a sign-in link and prints it.
func webLogin(c *cli.Context) error {
	if _, err := args(c); err != nil {
		return err
	}
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	url := flagString(c, "server")
	if url == "" {
		return usageError{"web-login asks a server for a link to its web page: give --server URL (or INGOT_SERVER), with your key file or --use-munge, or unix:PATH of the server's socket"}
	}
	svc, err := openRemote(c, url)
	if err != nil {
		return err
	}
	defer svc.Close()
	link, err := svc.(remoteBank).client.WebLink(c.Context)
	if err != nil {
		return fmt.Errorf("web-login: %w", err)
	}
	if f != formatTable {
		t := table{headers: []string{"URL", "Expires"}, data: link}
		t.add(link.URL, localTime(link.Expires))
		return show(c, t)
	}
	fmt.Fprintln(c.App.Writer, link.URL)
	fmt.Fprintf(c.App.ErrWriter, "Open it before %s, once: it signs the browser in as you.\n", link.Expires.Local().Format("15:04:05"))
	return nil
}
