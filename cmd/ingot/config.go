package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
)

// applyConfig sets, from the TOML file named by --config (or INGOT_CONFIG),
// each flag that neither the command line nor its environment variable
// set, at the command's level or before the command name: so a flag beats
// its INGOT_* variable, which beats the file, which beats the default. The
// file's keys are the flags' names and must be among keys; their values are
// strings, as on the command line. Keys and types are checked even where a
// flag overrides them, so that a mistake in the file shows at once. The
// keys of others are allowed too, and left alone: they are another
// command's (notify reads serve's file).
//
// It is not urfave/cli's altsrc: altsrc ignores unknown keys (a misspelt
// key would be lost without a word), looks only at the command's own flags
// (so a file's db would beat `ingot --db X serve`), and its errors name
// neither the file nor, for a bad value, the key.
func applyConfig(c *cli.Context, keys, others []string) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	var file map[string]any
	if _, err := toml.DecodeFile(path, &file); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("config file: %w", err)
		}
		return usageError{fmt.Sprintf("config file %s: %v", path, err)}
	}
	for _, key := range slices.Sorted(maps.Keys(file)) {
		if !slices.Contains(keys, key) && !slices.Contains(others, key) {
			return usageError{fmt.Sprintf("config file %s: unknown key %q; the keys are %s", path, key, strings.Join(keys, ", "))}
		}
		value, ok := file[key].(string)
		if !ok {
			return usageError{fmt.Sprintf("config file %s: key %s: want a string in quotes, as on the command line; got %v", path, key, file[key])}
		}
		if !slices.Contains(keys, key) || setBefore(c, key) {
			continue
		}
		if err := c.Set(key, value); err != nil {
			return usageError{fmt.Sprintf("config file %s: key %s: %v", path, key, err)}
		}
	}
	return nil
}

// setBefore reports whether a flag was given, or its environment variable
// set, at any level of the command line (for a flag of alternativeGroups,
// its variable counts while no flag of its group is given).
func setBefore(c *cli.Context, name string) bool {
	for _, ctx := range c.Lineage() {
		if ctx.IsSet(name) {
			return true
		}
	}
	return fromVariable(c, name) != ""
}

// logLevels are the values of --log-level.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// logLevel is the value of --log-level: one of logLevels, so that a
// mistyped level is refused wherever it comes from (flag, variable, file).
type logLevel struct{ slog.Level }

func (l *logLevel) Set(s string) error {
	level, ok := logLevels[s]
	if !ok {
		return fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
	l.Level = level
	return nil
}

func (l *logLevel) String() string { return strings.ToLower(l.Level.String()) }
