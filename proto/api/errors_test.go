package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ingot-hpc/ingot/ledger"
	"github.com/ingot-hpc/ingot/lien"
	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/proto/auth"
)

func TestCodesAreUnique(t *testing.T) {
	seen := map[api.Code]bool{}
	for _, c := range api.Codes {
		if seen[c.Code] || c.Code == "" || c.Status < 400 {
			t.Errorf("code %q (status %d) is empty, repeated or not an error status", c.Code, c.Status)
		}
		seen[c.Code] = true
	}
}

func TestFromError(t *testing.T) {
	tests := []struct {
		err    error
		code   api.Code
		status int
	}{
		{fmt.Errorf("deposit: %w", ledger.ErrInvalid), api.CodeInvalid, http.StatusBadRequest},
		{lien.ErrNoLien, api.CodeNotFound, http.StatusNotFound},
		{fmt.Errorf("%w: and %w", ledger.ErrNotFound, ledger.ErrInsufficientFunds), api.CodeInsufficientFunds, http.StatusConflict},
		{lien.ErrAlreadyCharged, api.CodeAlreadyCharged, http.StatusConflict},
		{fmt.Errorf("%w: bad", auth.ErrBadSignature), api.CodeUnauthenticated, http.StatusUnauthorized},
		{fmt.Errorf("%w (3 nonces)", auth.ErrNonceCacheFull), api.CodeUnavailable, http.StatusServiceUnavailable},
		{api.Errorf(api.CodeForbidden, "no"), api.CodeForbidden, http.StatusForbidden},
		{errors.New("disk on fire at /var/lib/ingot"), api.CodeInternal, http.StatusInternalServerError},
		{fmt.Errorf("%w: entry 3", ledger.ErrCorrupt), api.CodeCorrupt, http.StatusInternalServerError},
		{fmt.Errorf("%w: db1:5432 refused", ledger.ErrUnavailable), api.CodeUnavailable, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		e := api.FromError(tt.err)
		if e.Code != tt.code || e.Code.Status() != tt.status {
			t.Errorf("FromError(%v) = %s (%d), want %s (%d)", tt.err, e.Code, e.Code.Status(), tt.code, tt.status)
		}
	}
	if e := api.FromError(errors.New("disk on fire at /var/lib/ingot")); e.Message == "" || e.Message == "disk on fire at /var/lib/ingot" {
		t.Errorf("an internal error shows %q", e.Message)
	}
	if e := api.FromError(fmt.Errorf("%w: db1:5432 refused", ledger.ErrUnavailable)); strings.Contains(e.Message, "db1") {
		t.Errorf("an unavailable database shows %q", e.Message)
	}
}
