package multisite

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ingot-hpc/ingot/internal/ingotproc"
)

// TestMultisite runs the three banks under faults, once on bank files and
// once with a site on PostgreSQL: short ones by default (make test, under
// INGOT_E2E=1), or what the environment asks (make e2e-multisite):
//
//	INGOT_MULTISITE_DURATION  how long each run's load lasts (Go's duration: 5m)
//	INGOT_MULTISITE_ENGINE    bbolt or postgres (default: both)
//	INGOT_MULTISITE_BIN       the ingot binary (default: ./cmd/ingot built here)
//	INGOT_MULTISITE_SEED      the choices of amounts and faults
//
// It runs real servers under load for half a minute or more, so only
// under INGOT_E2E=1.
func TestMultisite(t *testing.T) {
	if os.Getenv("INGOT_E2E") != "1" {
		t.Skip("three ingot serve processes under faults: set INGOT_E2E=1")
	}
	engines := []string{"bbolt", "postgres"}
	if e := os.Getenv("INGOT_MULTISITE_ENGINE"); e != "" {
		engines = []string{e}
	}
	cfg := Config{Duration: 25 * time.Second, Binary: os.Getenv("INGOT_MULTISITE_BIN")}
	if d := os.Getenv("INGOT_MULTISITE_DURATION"); d != "" {
		v, err := time.ParseDuration(d)
		if err != nil {
			t.Fatalf("INGOT_MULTISITE_DURATION=%s: %v", d, err)
		}
		cfg.Duration = v
	}
	if v := os.Getenv("INGOT_MULTISITE_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("INGOT_MULTISITE_SEED=%s: %v", v, err)
		}
		cfg.Seed = seed
	}
	if cfg.Binary == "" {
		cfg.Binary = ingotproc.Build(t, t.TempDir())
	}
	for _, e := range engines {
		t.Run(e, func(t *testing.T) {
			c := cfg
			c.Engine = e
			Run(t, c)
		})
	}
}
