package charge

// CompiledTable is a rate table checked and put in the form pricing
// needs. Checking and compiling a table costs more than pricing a job
// with it, so a caller that prices many jobs under one table compiles it
// once. It is safe for concurrent use.
type CompiledTable struct {
	table    RateTable // a copy of the table, whose spelling of the rates the explanations show
	compiled compiledTable
}

// Compile checks the table as Validate does and compiles it.
func (t RateTable) Compile() (*CompiledTable, error) {
	c, err := t.compile()
	if err != nil {
		return nil, err
	}
	return &CompiledTable{table: t.clone(), compiled: c}, nil
}

// Price is the package's Price under the compiled table.
func (c *CompiledTable) Price(policy Policy, shape Shape, u Usage) (Amount, error) {
	return c.compiled.price(c.table.Rates, policy, shape, u)
}

// Quote is the package's Quote under the compiled table.
func (c *CompiledTable) Quote(policy Policy, shape Shape, req Request) (Amount, error) {
	u, err := req.usage()
	if err != nil {
		return Amount{}, err
	}
	return asQuote(c.Price(policy, shape, u))
}
