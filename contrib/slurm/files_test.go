package slurm

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

func TestLuaString(t *testing.T) {
	for in, want := range map[string]string{
		`/usr/bin/ingot`: `"/usr/bin/ingot"`,
		`say "hi" \ bye`: `"say \"hi\" \\ bye"`,
		"line\n1":        `"line\0101"`,
		"tab\t":          `"tab\009"`,
		"é":              `"é"`,
	} {
		if got := luaString(in); got != want {
			t.Errorf("luaString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestScriptsAreShell: the prolog and epilog, filled in with awkward
// settings, are valid sh and quote every setting.
func TestScriptsAreShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	s := Settings{Command: []string{"/opt/ingot dir/ingot", "--server", "https://bank:8443", "--key-file", "/etc/it's.key"}, Machine: "hpc 1",
		SubmitTimeout: 2, HookTimeout: 30, Path: "/usr/bin:/bin", SlurmConf: "/etc/slurm/slurm.conf", Log: "/var/log/slurm/ingot.log"}
	for _, name := range []string{"ingot-prolog", "ingot-epilog"} {
		var buf bytes.Buffer
		if err := Write(&buf, name, s); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(sh, "-n", "-c", buf.String()).CombinedOutput(); err != nil {
			t.Errorf("%s is not valid sh: %v %s\n%s", name, err, out, &buf)
		}
		if !strings.Contains(buf.String(), `'/etc/it'\''s.key'`) || !strings.Contains(buf.String(), "--machine 'hpc 1'") {
			t.Errorf("%s does not quote its settings:\n%s", name, &buf)
		}
	}
}
