package main

import "github.com/urfave/cli/v2"

// descriptionFlag is the --description (-d) of the commands that make or
// change something; what says what the text describes and where it shows.
func descriptionFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "description", Aliases: []string{"d"}, Usage: "free `TEXT` describing " + what}
}
