package ledger

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// QuotaChange is a quota proposed for a project: Shares with some works
// out the split as it would be with them, changing nothing, so that a
// manager sees what a new quota does before ModifyNode sets it.
type QuotaChange struct {
	Node  string
	Kind  QuotaKind
	Quota decimal.Decimal
}

// String is the change as ParseQuotaChange reads it: "chem.lab1=dynamic:0.6".
func (c QuotaChange) String() string {
	return c.Node + "=" + Policy{QuotaKind: c.Kind, Quota: c.Quota}.QuotaText()
}

// QuotaTexts are the changes' texts (nil for none).
func QuotaTexts(with []QuotaChange) []string {
	var out []string
	for _, w := range with {
		out = append(out, w.String())
	}
	return out
}

// ParseQuotaChange reads "NODE=QUOTA", QUOTA as ParseQuota reads it.
func ParseQuotaChange(s string) (QuotaChange, error) {
	node, quota, ok := strings.Cut(s, "=")
	if !ok {
		return QuotaChange{}, fmt.Errorf("%w: %s: want NODE=QUOTA, e.g. chem.lab1=dynamic:0.6", ErrInvalid, Excerpt(s))
	}
	if err := CheckNodeName(node); err != nil {
		return QuotaChange{}, err
	}
	kind, value, err := ParseQuota("quota of "+node, quota)
	return QuotaChange{Node: node, Kind: kind, Quota: value}, err
}

// ParseQuota reads a quota as the command line writes it (QuotaText):
// static:CREDITS, dynamic:FRACTION, shares:WEIGHT, or none; what names
// the value in errors. The kind and the value's range are checkPolicy's.
func ParseQuota(what, s string) (QuotaKind, decimal.Decimal, error) {
	if s == "none" {
		return QuotaNone, decimal.Zero, nil
	}
	kind, value, ok := strings.Cut(s, ":")
	if !ok || kind == "" {
		return QuotaNone, decimal.Zero, fmt.Errorf("%w: %s %s: want static:CREDITS, dynamic:FRACTION, shares:WEIGHT or none", ErrInvalid, what, Excerpt(s))
	}
	v, err := ParseDecimal(what, value)
	return QuotaKind(kind), v, err
}
