package slurm

import (
	"embed"
	"fmt"
	"io"
	"strings"
	"text/template"
)

//go:embed job_submit.lua ingot-prolog ingot-epilog
var files embed.FS

// Names are the files, in the order setup writes them.
var Names = []string{"job_submit.lua", "ingot-prolog", "ingot-epilog"}

// Settings fill in the files.
type Settings struct {
	// Command is the ingot command line the hooks run, with the flags that
	// say which bank and key (--server URL --key-file FILE), as words.
	Command []string
	// Machine is the bank's machine for this cluster.
	Machine string
	// SubmitTimeout bounds the submit hook's call, in seconds: every other
	// submission waits for it. HookTimeout bounds the prolog's and
	// epilog's.
	SubmitTimeout, HookTimeout int
	// FailOpen lets a job through when the bank cannot be asked.
	FailOpen bool
	// NodeFail is what the epilog charges for a run a node failure ended:
	// "charge" (or "") or "free".
	NodeFail string
	// SubmitSocket is the Unix socket of `ingot slurm submit-server`, which
	// job_submit.lua asks first ("" for none: it starts `ingot slurm
	// submit` for each job).
	SubmitSocket string
	// FallbackQOS is the QOS a job moved to the fallback account gets
	// ("" keeps its own).
	FallbackQOS string
	// Path and SlurmConf are the PATH (where Slurm's commands are) and
	// SLURM_CONF ("" for Slurm's default) of the prolog and epilog: the
	// controller runs them with neither set.
	Path, SlurmConf string
	// Log is the file the prolog and epilog append their messages to: the
	// controller keeps none of a script's output.
	Log string
}

// Write fills in file name with s.
func Write(w io.Writer, name string, s Settings) error {
	t, err := template.New(name).Funcs(template.FuncMap{"lua": luaString, "sh": shellWords, "list": func(s ...string) []string { return s }}).ParseFS(files, name)
	if err != nil {
		return fmt.Errorf("slurm files: %w", err)
	}
	if err := t.Execute(w, s); err != nil {
		return fmt.Errorf("slurm files: %s: %w", name, err)
	}
	return nil
}

// luaString is s as a Lua 5.1 string literal: quotes and backslashes
// escaped, control bytes as \ddd (Lua 5.1 has no \x), other bytes as they
// are.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03d", c) // three digits: a digit after it stays a digit
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// shellWords are words quoted for sh.
func shellWords(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
