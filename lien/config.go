package lien

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ingot-hpc/ingot/charge"
	"github.com/ingot-hpc/ingot/ledger"
)

// Record kinds and keys this package keeps in the ledger.
const (
	recordConfig      = "config"
	keyLienConfig     = "lien"
	keyRates          = "rates"
	recordQuote       = "quote"
	recordReservation = "reservation"
)

// DefaultGrace is how long a lien outlives its job's wallclock limit.
const DefaultGrace = 10 * time.Minute

// Config is how liens and charges behave: charge policies and fallbacks at
// three levels (project, machine, global; the most specific wins, and a
// project inherits from its ancestors), and the grace period.
type Config struct {
	GraceSeconds     int64                    `json:"grace_seconds"`
	Policy           charge.Policy            `json:"policy,omitzero"`
	MachinePolicies  map[string]charge.Policy `json:"machine_policies,omitempty"`
	ProjectPolicies  map[string]charge.Policy `json:"project_policies,omitempty"`
	Fallback         string                   `json:"fallback,omitempty"`
	MachineFallbacks map[string]string        `json:"machine_fallbacks,omitempty"`
	ProjectFallbacks map[string]string        `json:"project_fallbacks,omitempty"`
}

// Scope says where a policy or fallback applies: a machine, a project (and
// its subtree), or, with both empty, everywhere.
type Scope struct {
	Machine string `json:"machine,omitempty"`
	Project string `json:"project,omitempty"`
}

func (s Scope) String() string {
	switch {
	case s.Project != "":
		return "project " + s.Project
	case s.Machine != "":
		return "machine " + s.Machine
	}
	return "global"
}

func loadRecord[T any](tx ledger.Tx, kind, key string, v *T) (bool, error) {
	r, ok, err := tx.Record(kind, key)
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(r.Value, v); err != nil {
		return false, fmt.Errorf("%w: record %s/%s: %v", ledger.ErrCorrupt, kind, key, err)
	}
	return true, nil
}

func recordOf(kind, key string, v any) (*ledger.Record, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("lien: encode %s/%s: %w", kind, key, err)
	}
	return &ledger.Record{Kind: kind, Key: key, Value: b}, nil
}

func loadConfig(tx ledger.Tx) (Config, error) {
	c := Config{GraceSeconds: int64(DefaultGrace / time.Second)}
	_, err := loadRecord(tx, recordConfig, keyLienConfig, &c)
	return c, err
}

// loadRates is the rate table in force, with the bank's precision.
func loadRates(tx ledger.Tx, precision int32) (charge.RateTable, error) {
	t := charge.DefaultRateTable()
	if _, err := loadRecord(tx, recordConfig, keyRates, &t); err != nil {
		return t, err
	}
	t.Precision = precision
	return t, nil
}

// decoded keeps a record's value as last decoded, with the record's
// digest as the ledger keeps it: every lien and charge reads the rate
// table and the configuration, and decoding and checking the table alone
// took an eighth of the writer's time with a QOS multiplier and a night
// window; reading a large table to compare it with the one decoded cost
// more than pricing. Keyed by the digest, it is right for any
// transaction, whatever snapshot it reads. A record written before the
// ledger kept digests is compared byte for byte instead. The value is
// shared: the pricing paths that use it only read it (a guaranteed quote
// copies the table it keeps); the paths that change a record load their
// own copy.
type decoded[T any] struct {
	mu     sync.Mutex
	digest string // of the record decoded, or "" if the ledger kept none
	raw    []byte // the record decoded, when it has no digest
	value  T
	// absent is the value when there is no record (a default), once loaded.
	absent    T
	hasAbsent bool
}

// load is the record kind/key decoded by load, from the cache when the
// record is the one last decoded; without the record, the value load
// gives then (a default), loaded once.
func (d *decoded[T]) load(tx ledger.Tx, kind, key string, load func(ledger.Tx) (T, error)) (T, error) {
	digest, ok, err := ledger.RecordDigest(tx, kind, key)
	if err != nil {
		var zero T
		return zero, err
	}
	var raw []byte
	if !ok {
		r, found, err := tx.Record(kind, key)
		if err != nil {
			var zero T
			return zero, err
		}
		if !found {
			return d.loadAbsent(tx, load)
		}
		raw = r.Value
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case digest != "" && d.digest == digest:
		return d.value, nil
	case raw != nil && d.raw != nil && bytes.Equal(d.raw, raw):
		return d.value, nil
	}
	v, err := load(tx)
	if err == nil {
		d.digest, d.raw, d.value = digest, bytes.Clone(raw), v
	}
	return v, err
}

// loadAbsent is the value without the record, loaded once.
func (d *decoded[T]) loadAbsent(tx ledger.Tx, load func(ledger.Tx) (T, error)) (T, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.hasAbsent {
		v, err := load(tx)
		if err != nil {
			return v, err
		}
		d.absent, d.hasAbsent = v, true
	}
	return d.absent, nil
}

// pricingRates and pricingConfig are loadRates (compiled, so that each
// job's pricing does not check and compile the table again) and loadConfig
// for the paths that price and place jobs, which only read them.
func (b *Bank) pricingRates(tx ledger.Tx) (*charge.CompiledTable, error) {
	return b.rates.load(tx, recordConfig, keyRates, func(tx ledger.Tx) (*charge.CompiledTable, error) {
		t, err := loadRates(tx, b.l.Settings().Precision)
		if err != nil {
			return nil, err
		}
		return t.Compile()
	})
}

func (b *Bank) pricingConfig(tx ledger.Tx) (Config, error) {
	return b.config.load(tx, recordConfig, keyLienConfig, loadConfig)
}

// nearest looks a project and then its ancestors up in m.
func nearest[V any](m map[string]V, project string) (V, bool) {
	for p := project; p != ""; p = ledger.ParentOf(p) {
		if v, ok := m[p]; ok {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// policyFor is the charge policy for a job of project on machine.
func (c Config) policyFor(project, machine string) charge.Policy {
	p, _ := nearest(c.ProjectPolicies, project)
	return charge.ResolvePolicy(c.Policy, c.MachinePolicies[machine], p)
}

// fallbackFor is the node a lien that project cannot cover goes to ("" for
// none).
func (c Config) fallbackFor(project, machine string) string {
	target, ok := nearest(c.ProjectFallbacks, project)
	if !ok {
		if target, ok = c.MachineFallbacks[machine]; !ok {
			target = c.Fallback
		}
	}
	if suffix, ok := strings.CutPrefix(target, "+"); ok {
		return project + suffix
	}
	return target
}

// Config returns the configuration in force.
func (b *Bank) Config(ctx context.Context) (Config, error) {
	var c Config
	err := b.l.View(ctx, func(tx ledger.Tx) (err error) {
		c, err = loadConfig(tx)
		return err
	})
	return c, err
}

// Rates returns the rate table in force.
func (b *Bank) Rates(ctx context.Context) (charge.RateTable, error) {
	var t charge.RateTable
	err := b.l.View(ctx, func(tx ledger.Tx) (err error) {
		t, err = loadRates(tx, b.l.Settings().Precision)
		return err
	})
	return t, err
}

// SetRates replaces the rate table. Guaranteed quotes keep the table they
// were made with.
func (b *Bank) SetRates(ctx context.Context, req ledger.Request, t charge.RateTable) (charge.RateTable, error) {
	t.Precision = b.l.Settings().Precision
	// A round trip through the decoder validates the table and stores the
	// names in Gold's spelling, whatever case they were given in.
	raw, err := json.Marshal(t)
	if err != nil {
		return charge.RateTable{}, fmt.Errorf("lien: encode rate table: %w", err)
	}
	if t, err = charge.DecodeRateTable(raw); err != nil {
		return charge.RateTable{}, fmt.Errorf("%w: %v", ledger.ErrInvalid, err)
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindRecord, t, func(w *ledger.Writer) (charge.RateTable, error) {
		rec, err := recordOf(recordConfig, keyRates, t)
		if err != nil {
			return charge.RateTable{}, err
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Record: rec, Description: "rate table"})
		return t, err
	})
}

// ConfigChange is one change to Config; the zero value of a field means
// "leave it".
type ConfigChange struct {
	Scope  Scope          `json:"scope"`
	Policy *charge.Policy `json:"policy,omitempty"`
	// Fallback is an account or project name, "+suffix", or "" to remove.
	Fallback *string        `json:"fallback,omitempty"`
	Grace    *time.Duration `json:"grace,omitempty"`
}

// ChangeConfig sets a policy or fallback at a scope, or the grace period
// (whole seconds).
func (b *Bank) ChangeConfig(ctx context.Context, req ledger.Request, ch ConfigChange) (Config, error) {
	if ch.Grace != nil && (*ch.Grace < 0 || *ch.Grace > 7*24*time.Hour || *ch.Grace%time.Second != 0) {
		return Config{}, fmt.Errorf("%w: grace %s must be whole seconds between 0 and a week", ledger.ErrInvalid, *ch.Grace)
	}
	if ch.Scope.Machine != "" && ch.Scope.Project != "" {
		return Config{}, fmt.Errorf("%w: a setting applies to a machine or a project, not both", ledger.ErrInvalid)
	}
	return ledger.Mutate(ctx, b.l, req, ledger.KindRecord, ch, func(w *ledger.Writer) (Config, error) {
		c, err := loadConfig(w.Tx())
		if err != nil {
			return Config{}, err
		}
		if err := checkScope(w.Tx(), ch.Scope); err != nil {
			return Config{}, err
		}
		if ch.Grace != nil {
			c.GraceSeconds = int64(*ch.Grace / time.Second)
		}
		if ch.Policy != nil {
			setScoped(&c.Policy, &c.MachinePolicies, &c.ProjectPolicies, ch.Scope, *ch.Policy)
		}
		if ch.Fallback != nil {
			if err := checkFallback(w.Tx(), *ch.Fallback); err != nil {
				return Config{}, err
			}
			setScoped(&c.Fallback, &c.MachineFallbacks, &c.ProjectFallbacks, ch.Scope, *ch.Fallback)
		}
		rec, err := recordOf(recordConfig, keyLienConfig, c)
		if err != nil {
			return Config{}, err
		}
		_, err = w.Append(ledger.Entry{Kind: ledger.KindRecord, Record: rec, Node: ch.Scope.Project, Description: "lien settings, " + ch.Scope.String()})
		return c, err
	})
}

// setScoped sets v at the scope; the zero value removes a scoped setting.
func setScoped[V comparable](global *V, machines, projects *map[string]V, s Scope, v V) {
	var zero V
	set := func(m *map[string]V, key string) {
		if v == zero {
			delete(*m, key)
			return
		}
		if *m == nil {
			*m = map[string]V{}
		}
		(*m)[key] = v
	}
	switch {
	case s.Project != "":
		set(projects, s.Project)
	case s.Machine != "":
		set(machines, s.Machine)
	default:
		*global = v
	}
}

func checkScope(tx ledger.Tx, s Scope) error {
	if s.Project != "" {
		if _, ok, err := tx.Node(s.Project); err != nil || !ok {
			return notFound(err, "no node named %q", s.Project)
		}
	}
	if s.Machine != "" {
		if _, ok, err := tx.Machine(s.Machine); err != nil || !ok {
			return notFound(err, "no machine named %q", s.Machine)
		}
	}
	return nil
}

// checkFallback accepts "", "+suffix" (checked when used), or an existing node.
func checkFallback(tx ledger.Tx, target string) error {
	if target == "" {
		return nil
	}
	if suffix, ok := strings.CutPrefix(target, "+"); ok {
		if err := ledger.CheckNodeName("x" + suffix); err != nil {
			return fmt.Errorf("fallback %q: %w", target, err)
		}
		return nil
	}
	_, ok, err := tx.Node(target)
	if err != nil || !ok {
		return notFound(err, "fallback: no node named %q", target)
	}
	return nil
}

// notFound is err, or, if err is nil, ErrNotFound with the message.
func notFound(err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %s", ledger.ErrNotFound, fmt.Sprintf(format, args...))
}
