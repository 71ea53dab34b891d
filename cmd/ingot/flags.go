package main

import (
	"github.com/urfave/cli/v2"

	"github.com/ingot-hpc/ingot/ledger"
)

// descriptionFlag is the --description (-d) of the commands that make or
// change something; what says what the text describes and where it shows.
// The text is held to the bank's rule for names and descriptions
// (ledger.CheckText: no control or format characters), before anything
// is asked of the bank, as the JSON API and the Gold listener hold it.
func descriptionFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "description", Aliases: []string{"d"}, Usage: "free `TEXT` describing " + what,
		Action: func(_ *cli.Context, text string) error { return ledger.CheckText("--description", text) }}
}
