package slurmtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/proto/munge/mungetest"
	"golang.org/x/sys/unix"
)

// Options says what the cluster has beyond the defaults.
type Options struct {
	// ClusterName is Slurm's ClusterName: "ingot" when empty.
	ClusterName string
	// PrologSlurmctld and EpilogSlurmctld are paths of the controller's
	// prolog and epilog; none when empty. Slurm runs them as root in
	// slurmctld's working directory, which is Dir, with an environment of
	// its own: no PATH and no SLURM_CONF, so a script that runs scontrol
	// sets SLURM_CONF=$(pwd)/slurm.conf.
	PrologSlurmctld, EpilogSlurmctld string
	// JobSubmitLua is the path of a job_submit.lua; when set, it is copied
	// beside slurm.conf, where Slurm looks for it, and JobSubmitPlugins=lua.
	JobSubmitLua string
	// GPUs is the number of GPUs (GRES gpu) of the node, fake devices that
	// Slurm schedules and accounts (as gres/gpu in AllocTRES) like real ones.
	GPUs int
	// CPUs is the node's number of CPUs, whatever the machine has: 2 when 0.
	CPUs int
	// MemoryMB is the node's RealMemory, the most a job may ask with
	// --mem: Slurm's default, 1, when 0.
	MemoryMB int
	// AccountingStorageEnforce is slurm.conf's: "associations,limits,qos"
	// when empty, so that a job needs an account the user is in.
	AccountingStorageEnforce string
	// Config is lines appended to slurm.conf.
	Config []string
}

// Cluster is a running one-node Slurm cluster of one test.
type Cluster struct {
	// Name is the cluster's name (ClusterName).
	Name string
	// Node is the name of its node: the host's short name, which Slurm
	// requires of a node whose slurmd runs here.
	Node string
	// Dir is the cluster's directory: slurm.conf and the other
	// configuration files, state, spool, logs (in Dir/log). It is removed
	// when the test ends.
	Dir string
	// Conf is the path of slurm.conf, which SLURM_CONF names.
	Conf string
	// JobDir is the directory where commands run, and so jobs by default:
	// any user may write in it, so that a job's output file can be made
	// whoever submits it.
	JobDir string
	// Ports are the TCP ports on 127.0.0.1 of the cluster's daemons, by
	// name: "slurmctld", "slurmd", "slurmdbd" and "mariadb".
	Ports map[string]int

	env     []string
	daemons []*daemon // in the order they started

	stopOnce sync.Once
	stopErr  error
}

// markerVar is the environment variable that every process the cluster
// starts inherits, so that Stop can find the ones that outlive the daemons.
const markerVar = "INGOT_SLURMTEST_DIR"

// Timeouts: generous for a machine shared with other work; a healthy
// cluster takes a fraction of each.
const (
	readyTimeout   = 60 * time.Second // one daemon's start
	commandTimeout = 60 * time.Second // one Slurm or MariaDB command
	stopTimeout    = 30 * time.Second // one daemon's stop, or the queue's draining
	pollInterval   = 100 * time.Millisecond
)

// binaries are the commands Start and the helpers need (setpriv only for
// SubmitAs and RunAs, but it is always there where Slurm is).
var binaries = []string{
	"slurmctld", "slurmd", "slurmdbd", "sbatch", "srun", "squeue", "scontrol",
	"scancel", "sinfo", "sacct", "sacctmgr",
	"mariadbd", "mariadb-install-db", "mariadb", "setpriv",
}

// Start starts a cluster that stops when the test ends, and fails the test,
// with the tails of the daemons' logs, if it does not come up.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	Require(t)
	munged := mungetest.Start(t)
	c, err := newCluster(t, opts)
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	// Registered before the first daemon starts, so that whatever did start
	// stops even when the start fails.
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("slurmtest: stop: %v", err)
		}
	})
	begin := time.Now()
	took, err := c.start(munged.Socket, opts)
	if err != nil {
		t.Fatalf("slurmtest: %v\n%s", err, c.logTails())
	}
	t.Logf("slurmtest: cluster %s up in %v (%s) in %s", c.Name, time.Since(begin).Round(time.Millisecond), took, c.Dir)
	return c
}

// Require skips the test unless this process is root and Slurm's and
// MariaDB's binaries are on PATH; under INGOT_E2E=1 it fails it instead.
// Start calls it; a test calls it before it prepares what Start needs.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "a Slurm cluster needs root (SlurmUser=root; slurmd starts jobs as their users)")
	}
	for _, name := range binaries {
		if _, err := exec.LookPath(name); err != nil {
			unavailable(t, "%s is not on PATH (Debian: apt-get install slurm-wlm slurmdbd munge mariadb-server; the daemons are in /usr/sbin)", name)
		}
	}
}

// unavailable skips the test, or fails it under INGOT_E2E=1.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("INGOT_E2E") == "1" {
		t.Fatalf(format+"; INGOT_E2E=1 requires it", args...)
	}
	t.Skipf(format+"; skipping (INGOT_E2E=1 makes this a failure)", args...)
}

// newCluster makes the cluster's directories and picks its name, node and
// ports; nothing runs yet.
func newCluster(t testing.TB, opts Options) (*Cluster, error) {
	// Not t.TempDir: its directories are private and their paths long,
	// and here other users (mysql, the jobs' users) must reach files and
	// sockets, whose paths must stay within the 108 bytes of a socket
	// address.
	dir, err := os.MkdirTemp("", "ingot-slurm-")
	if err != nil {
		return nil, fmt.Errorf("make the cluster's directory: %w", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	for _, sub := range []string{"log", "run", "state", "spool", "jobs"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("make the cluster's directory: %w", err)
		}
	}
	jobDir := filepath.Join(dir, "jobs")
	// Sticky and world-writable like /tmp: every job's user writes its
	// output file here.
	if err := os.Chmod(jobDir, 0o1777); err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("host name: %w", err)
	}
	name := opts.ClusterName
	if name == "" {
		name = "ingot"
	}
	c := &Cluster{
		Name:   name,
		Node:   strings.SplitN(host, ".", 2)[0],
		Dir:    dir,
		Conf:   filepath.Join(dir, "slurm.conf"),
		JobDir: jobDir,
		Ports:  map[string]int{},
	}
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	for i, name := range []string{"slurmctld", "slurmd", "slurmdbd", "mariadb"} {
		c.Ports[name] = ports[i]
	}
	c.env = append(slurmFreeEnviron(), "SLURM_CONF="+c.Conf, markerVar+"="+dir)
	return c, nil
}

// freePorts returns n TCP ports free on 127.0.0.1 now, all different:
// the listeners stay open until all are chosen.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// slurmFreeEnviron is this process's environment without Slurm's variables,
// which would point the commands elsewhere (a test run inside a Slurm job
// has SLURM_JOB_ID and the like).
func slurmFreeEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLURM_") && !strings.HasPrefix(kv, markerVar+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// Env is the environment for running Slurm's commands (sbatch, squeue,
// scontrol, sacct, sacctmgr...) against the cluster: this process's, less
// any SLURM_ variable, plus SLURM_CONF and the marker by which Stop finds
// what a command left running.
func (c *Cluster) Env() []string { return append([]string(nil), c.env...) }

// start writes the configuration and starts the daemons in the order they
// need one another, each ready before the next starts, and says how long
// each took.
func (c *Cluster) start(mungeSocket string, opts Options) (string, error) {
	password, err := randomHex(16)
	if err != nil {
		return "", err
	}
	if err := c.writeConfig(mungeSocket, password, opts); err != nil {
		return "", err
	}
	var took []string
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"mariadb", func() error { return c.startMariaDB(password) }},
		{"slurmdbd", c.startSlurmdbd},
		{"slurmctld", c.startSlurmctld},
		{"slurmd", c.startSlurmd},
	} {
		begin := time.Now()
		if err := step.run(); err != nil {
			return "", err
		}
		took = append(took, fmt.Sprintf("%s %v", step.name, time.Since(begin).Round(time.Millisecond)))
	}
	return strings.Join(took, ", "), nil
}

// startSlurmdbd starts slurmdbd and registers the cluster with it.
func (c *Cluster) startSlurmdbd() error {
	if err := c.startDaemon("slurmdbd", "slurmdbd", "-D"); err != nil {
		return err
	}
	if err := c.waitFor("slurmdbd to listen", func() error { return dial(c.Ports["slurmdbd"]) }); err != nil {
		return err
	}
	// Registered now, slurmctld finds its cluster at its first start rather
	// than adding it itself while it starts.
	_, err := c.Run("sacctmgr", "-i", "add", "cluster", c.Name)
	return err
}

// startSlurmctld starts slurmctld and waits until it answers.
func (c *Cluster) startSlurmctld() error {
	if err := c.startDaemon("slurmctld", "slurmctld", "-D"); err != nil {
		return err
	}
	return c.waitFor("slurmctld to answer", func() error {
		if err := dial(c.Ports["slurmctld"]); err != nil {
			return err
		}
		out, err := c.Run("scontrol", "ping")
		if err == nil && !strings.Contains(out, "is UP") {
			err = fmt.Errorf("scontrol ping: %s", strings.TrimSpace(out))
		}
		return err
	})
}

// startSlurmd starts slurmd and waits until the node is idle and slurmctld
// has registered with slurmdbd.
func (c *Cluster) startSlurmd() error {
	if err := c.startDaemon("slurmd", "slurmd", "-D"); err != nil {
		return err
	}
	if err := c.waitFor("the node to be idle", func() error {
		out, err := c.Run("sinfo", "-h", "-n", c.Node, "-o", "%T")
		if err == nil && strings.TrimSpace(out) != "idle" {
			err = fmt.Errorf("sinfo: node %s is %q", c.Node, strings.TrimSpace(out))
		}
		return err
	}); err != nil {
		return err
	}
	// slurmdbd pushes association changes only to a controller that has
	// registered with it (its host and port in the cluster's record).
	return c.waitFor("slurmctld to register with slurmdbd", func() error {
		out, err := c.Run("sacctmgr", "-n", "-P", "show", "cluster", c.Name, "format=ControlPort")
		if err == nil && strings.TrimSpace(out) != strconv.Itoa(c.Ports["slurmctld"]) {
			err = fmt.Errorf("sacctmgr: cluster %s has control port %q", c.Name, strings.TrimSpace(out))
		}
		return err
	})
}

// startMariaDB makes a database directory, starts mariadbd on it and makes
// slurmdbd's database user.
func (c *Cluster) startMariaDB(password string) error {
	mysql, err := user.Lookup("mysql")
	if err != nil {
		return fmt.Errorf("mariadb runs as user mysql: %w", err)
	}
	uid, _ := strconv.Atoi(mysql.Uid)
	gid, _ := strconv.Atoi(mysql.Gid)
	// mariadbd writes its socket, pid file and log as mysql.
	dir := filepath.Join(c.Dir, "mariadb")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	socket := filepath.Join(dir, "mysqld.sock")
	// --no-defaults: /etc/mysql's configuration is the system server's.
	if _, err := c.run(nil, "mariadb-install-db", "--no-defaults", "--user=mysql", "--datadir="+data,
		"--auth-root-authentication-method=socket", "--skip-test-db"); err != nil {
		return err
	}
	// A small buffer pool (slurmdbd logs that it recommends more), and the
	// long lock wait that slurmdbd asks for. No --log-error: the log goes
	// to standard error, Dir/log/mariadb.out.
	if err := c.startDaemon("mariadb", "mariadbd", "--no-defaults", "--user=mysql", "--datadir="+data,
		"--socket="+socket, "--port="+strconv.Itoa(c.Ports["mariadb"]), "--bind-address=127.0.0.1",
		"--pid-file="+filepath.Join(dir, "mysqld.pid"), "--innodb-buffer-pool-size=64M", "--innodb-lock-wait-timeout=900"); err != nil {
		return err
	}
	if err := c.waitFor("mariadbd to listen", func() error {
		conn, err := net.DialTimeout("unix", socket, time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	}); err != nil {
		return err
	}
	// slurmdbd connects over TCP (StorageHost=127.0.0.1: with localhost it
	// looks for the default socket).
	sql := fmt.Sprintf("CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '%s'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';", password)
	_, err = c.run(nil, "mariadb", "--no-defaults", "--socket="+socket, "--user=root", "--execute="+sql)
	return err
}

// writeConfig writes slurm.conf, slurmdbd.conf, gres.conf and
// job_submit.lua as opts asks.
func (c *Cluster) writeConfig(mungeSocket, password string, opts Options) error {
	var b bytes.Buffer
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("ClusterName=%s", c.Name)
	line("SlurmctldHost=%s(127.0.0.1)", c.Node)
	line("SlurmUser=root")
	line("SlurmctldPort=%d", c.Ports["slurmctld"])
	line("SlurmdPort=%d", c.Ports["slurmd"])
	// The test's munged, not the system's: AuthInfo for the cluster's own
	// messages, AccountingStoragePass for those to slurmdbd, which ignore
	// AuthInfo.
	line("AuthType=auth/munge")
	line("CredType=cred/munge")
	line("AuthInfo=socket=%s", mungeSocket)
	line("AccountingStoragePass=%s", mungeSocket)
	// Listen on the addresses configured (127.0.0.1) rather than on all.
	line("CommunicationParameters=NoCtldInAddrAny,NoInAddrAny")
	line("StateSaveLocation=%s", filepath.Join(c.Dir, "state"))
	line("SlurmdSpoolDir=%s", filepath.Join(c.Dir, "spool"))
	line("SlurmctldPidFile=%s", filepath.Join(c.Dir, "run", "slurmctld.pid"))
	line("SlurmdPidFile=%s", filepath.Join(c.Dir, "run", "slurmd.pid"))
	line("SlurmctldLogFile=%s", filepath.Join(c.Dir, "log", "slurmctld.log"))
	line("SlurmdLogFile=%s", filepath.Join(c.Dir, "log", "slurmd.log"))
	// No cgroups: process tracking by /proc works in any container.
	line("ProctrackType=proctrack/linuxproc")
	line("TaskPlugin=task/none")
	line("JobAcctGatherType=jobacct_gather/linux")
	// Debian's default, /usr/bin/mail, is not installed: slurmctld logs
	// an error at each start.
	line("MailProg=/bin/true")
	line("SchedulerType=sched/backfill")
	// Schedule at once: by default a job submitted while the node is full
	// waits for the next backfill pass (30 s), and a batch job up to 3 s.
	line("SchedulerParameters=sched_interval=1,bf_interval=1,batch_sched_delay=0")
	line("SelectType=select/cons_tres")
	line("SelectTypeParameters=CR_Core")
	line("ReturnToService=2")
	// The node has the CPUs and memory configured, whatever the machine
	// has: tests do not depend on the number of cores.
	line("SlurmdParameters=config_overrides")
	line("AccountingStorageType=accounting_storage/slurmdbd")
	line("AccountingStorageHost=127.0.0.1")
	line("AccountingStoragePort=%d", c.Ports["slurmdbd"])
	enforce := opts.AccountingStorageEnforce
	if enforce == "" {
		enforce = "associations,limits,qos"
	}
	line("AccountingStorageEnforce=%s", enforce)
	if opts.PrologSlurmctld != "" {
		line("PrologSlurmctld=%s", opts.PrologSlurmctld)
	}
	if opts.EpilogSlurmctld != "" {
		line("EpilogSlurmctld=%s", opts.EpilogSlurmctld)
	}
	if opts.JobSubmitLua != "" {
		lua, err := os.ReadFile(opts.JobSubmitLua)
		if err != nil {
			return fmt.Errorf("job_submit.lua: %w", err)
		}
		if err := os.WriteFile(filepath.Join(c.Dir, "job_submit.lua"), lua, 0o644); err != nil {
			return err
		}
		line("JobSubmitPlugins=lua")
	}
	cpus := opts.CPUs
	if cpus == 0 {
		cpus = 2
	}
	node := fmt.Sprintf("NodeName=%s NodeAddr=127.0.0.1 CPUs=%d", c.Node, cpus)
	if opts.MemoryMB > 0 {
		node += fmt.Sprintf(" RealMemory=%d", opts.MemoryMB)
	}
	if opts.GPUs > 0 {
		line("GresTypes=gpu")
		// Without it, AllocTRES and sacct do not show the GPUs.
		line("AccountingStorageTRES=gres/gpu")
		node += fmt.Sprintf(" Gres=gpu:%d", opts.GPUs)
		if err := c.writeGres(opts.GPUs); err != nil {
			return err
		}
	}
	line("%s State=UNKNOWN", node)
	line("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
	for _, l := range opts.Config {
		line("%s", l)
	}
	if err := os.WriteFile(c.Conf, b.Bytes(), 0o644); err != nil {
		return err
	}

	b.Reset()
	line("AuthType=auth/munge")
	line("AuthInfo=socket=%s", mungeSocket)
	line("DbdHost=%s", c.Node)
	line("DbdAddr=127.0.0.1")
	line("DbdPort=%d", c.Ports["slurmdbd"])
	line("SlurmUser=root")
	line("PidFile=%s", filepath.Join(c.Dir, "run", "slurmdbd.pid"))
	line("LogFile=%s", filepath.Join(c.Dir, "log", "slurmdbd.log"))
	line("StorageType=accounting_storage/mysql")
	line("StorageHost=127.0.0.1")
	line("StoragePort=%d", c.Ports["mariadb"])
	line("StorageUser=slurm")
	line("StoragePass=%s", password)
	line("StorageLoc=slurm_acct_db")
	// slurmdbd refuses a configuration that others may read (it holds the
	// database password); it reads it beside slurm.conf.
	return os.WriteFile(filepath.Join(c.Dir, "slurmdbd.conf"), b.Bytes(), 0o600)
}

// writeGres writes gres.conf for n fake GPUs.
func (c *Cluster) writeGres(n int) error {
	// slurmd wants character devices (it ignores a regular file, with an
	// error in its log), and numbers the GPUs by the digits that end their
	// names (CUDA_VISIBLE_DEVICES): devices like /dev/null (1,3) named
	// gpu0, gpu1...
	dev := filepath.Join(c.Dir, "dev")
	if err := os.Mkdir(dev, 0o755); err != nil {
		return err
	}
	var lines []string
	for i := range n {
		f := filepath.Join(dev, "gpu"+strconv.Itoa(i))
		if err := unix.Mknod(f, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			return fmt.Errorf("make a fake GPU device: %w", err)
		}
		lines = append(lines, "Name=gpu File="+f)
	}
	return os.WriteFile(filepath.Join(c.Dir, "gres.conf"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// randomHex returns n random bytes in hex.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// dial checks that something listens on port of 127.0.0.1.
func dial(port int) error {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err == nil {
		conn.Close()
	}
	return err
}
