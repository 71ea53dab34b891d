package hfs

// assignQuotas is step 1: top-down, each node's subtree quota is split among
// its children by kind and capped by their limits; what the children do not
// take is the node's own quota. The root's subtree quota is the pool, capped
// by the root's own limit. Ownership and group non-shared are carved out
// before the quotas split the rest (carveQuota).
func assignQuotas(nodes []planNode, total num) {
	for i := len(nodes) - 1; i >= 0; i-- { // reverse pre-order: children first
		n := &nodes[i]
		n.carve = n.ownership.add(n.reserve)
		for _, c := range n.children {
			n.carve = n.carve.add(nodes[c].carve)
		}
	}
	nodes[0].subtreeQuota = nodes[0].limit.capped(total)
	var c carver
	for i := range nodes { // pre-order: a parent is split before its children
		splitQuota(nodes, i, &c)
	}
}

// splitQuota applies the LSF-style formulas of DESIGN section 4 to node i's
// children, with q its subtree quota less what is carved (carveQuota):
//
//	static:  v · Sa/Σstatic       where Sa = min(Σstatic, q)
//	dynamic: f · Da/max(Σf, 1)    where Da = q − Sa
//	shares:  w · R/Σw             where R  = q − Sa − Σ dynamic quotas
//
// Each child's quota is its carved part plus that, then capped by its
// limit; what a limit cuts off stays with node i (it is not handed to
// siblings). When there are no share children, or their weights sum to 0,
// R stays with node i too.
func splitQuota(nodes []planNode, i int, c *carver) {
	n := &nodes[i]
	q, grants := c.carveQuota(nodes, i)
	var sum [3]num // indexed by QuotaKind
	for _, c := range n.children {
		sum[nodes[c].kind] = sum[nodes[c].kind].add(nodes[c].value)
	}

	// scale[k] turns a child's value of kind k into its quota.
	var scale [3]num
	staticPart := minNum(sum[Static], q)
	if sum[Static].sign() > 0 {
		scale[Static] = staticPart.quo(sum[Static])
	}
	dynamicPool := q.sub(staticPart)
	scale[Dynamic] = dynamicPool.quo(maxNum(sum[Dynamic], intNum(1)))
	if sum[Shares].sign() > 0 {
		rest := dynamicPool.sub(scale[Dynamic].mul(sum[Dynamic]))
		scale[Shares] = rest.quo(sum[Shares])
	}

	n.ownQuota = n.subtreeQuota
	for k, c := range n.children {
		child := &nodes[c]
		carved := child.carve
		if grants != nil {
			carved = grants[k]
		}
		child.subtreeQuota = child.limit.capped(carved.add(child.value.mul(scale[child.kind])))
		n.ownQuota = n.ownQuota.sub(child.subtreeQuota)
	}
}

// carver works out the carve of step 1. It keeps, made only when a pool
// runs short of the carves below a node, what each subtree's ownership and
// group non-shared claim level by level.
type carver struct {
	levels [][]num // levels[i][d]: the claims d levels below node i (0: its own)
	done   []bool
	grants []num // scratch: what each child's subtree carve gets
}

// carveQuota takes node i's carve out of its subtree quota, top-down and
// level by level, as LSF satisfies non-shared and ownership configured on
// several levels: first the node's own group non-shared, then its own
// ownership (a leaf's), then its children's own claims (their group
// non-shared and ownership), then their children's, and so on down. When
// what is left cannot cover a level's claims, that level's nodes share it
// in proportion to their claims, and every level below gets nothing: the
// shortfall falls on the lowest levels (Result.Shortfalls names them).
//
// It records what the node got of its own and returns what is left for
// the children's quotas and, when the carves below do not all fit, what
// each child's subtree gets of its carve (nil: each gets all of it). What the node keeps of its own stays in its own quota: the
// reserve is held there by step 2 when the subtree does not use it, the
// ownership lent. A child given less than its subtree's carve carves its
// own claim and its subtree's from that alone (its quota part is 0, since
// nothing was left here): the same rule one level down gives the same
// split, so the whole tree is satisfied level by level from the root.
func (c *carver) carveQuota(nodes []planNode, i int) (rest num, grants []num) {
	n := &nodes[i]
	rest = n.subtreeQuota
	n.reserved = minNum(n.reserve, rest)
	rest = rest.sub(n.reserved)
	n.owned = minNum(n.ownership, rest)
	rest = rest.sub(n.owned)
	children := n.carve.sub(n.reserve).sub(n.ownership)
	if children.cmp(rest) <= 0 {
		return rest.sub(children), nil
	}

	// Short: find the first level below the node whose claims do not fit
	// in what is left (there is one: all of them together do not), and the
	// fraction of them that does.
	var above num // what the levels before the short one claim
	depth, fraction := 0, num{}
	for ; ; depth++ {
		var level num
		for _, ch := range n.children {
			if l := c.claims(nodes, ch); depth < len(l) {
				level = level.add(l[depth])
			}
		}
		if above.add(level).cmp(rest) > 0 {
			fraction = rest.sub(above).quo(level)
			break
		}
		above = above.add(level)
	}
	c.grants = c.grants[:0]
	for _, ch := range n.children {
		var got num
		for d, v := range c.claims(nodes, ch) {
			switch {
			case d < depth:
				got = got.add(v)
			case d == depth:
				got = got.add(v.mul(fraction))
			}
		}
		c.grants = append(c.grants, got)
	}
	return num{}, c.grants
}

// claims is what node i's subtree claims level by level: [0] its own
// ownership and group non-shared, [d] those of the nodes d levels below
// it; empty when the subtree claims nothing, and never ending in 0.
func (c *carver) claims(nodes []planNode, i int) []num {
	if c.done == nil {
		c.levels, c.done = make([][]num, len(nodes)), make([]bool, len(nodes))
	}
	if c.done[i] {
		return c.levels[i]
	}
	n := &nodes[i]
	var out []num
	if n.carve.sign() > 0 {
		out = []num{n.ownership.add(n.reserve)}
		for _, ch := range n.children {
			for d, v := range c.claims(nodes, ch) {
				if d+1 == len(out) {
					out = append(out, v)
				} else {
					out[d+1] = out[d+1].add(v)
				}
			}
		}
	}
	c.levels[i], c.done[i] = out, true
	return out
}
