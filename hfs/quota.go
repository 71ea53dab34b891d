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
	for i := range nodes { // pre-order: a parent is split before its children
		splitQuota(nodes, i)
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
func splitQuota(nodes []planNode, i int) {
	n := &nodes[i]
	q, carveScale := carveQuota(nodes, i)
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
	for _, c := range n.children {
		child := &nodes[c]
		child.subtreeQuota = child.limit.capped(child.carve.mul(carveScale).add(child.value.mul(scale[child.kind])))
		n.ownQuota = n.ownQuota.sub(child.subtreeQuota)
	}
}

// carveQuota takes node i's carve out of its subtree quota, top-down: first
// its own group non-shared, then its own ownership (a leaf's), then its
// children's carves, scaled down together when they do not fit. It records
// what the node got of its own and returns what is left for the children's
// quotas, and the scale of the children's carves. What the node keeps of
// its own stays in its own quota: the reserve is held there by step 2
// when the subtree does not use it, the ownership lent.
func carveQuota(nodes []planNode, i int) (rest, carveScale num) {
	n := &nodes[i]
	rest = n.subtreeQuota
	n.reserved = minNum(n.reserve, rest)
	rest = rest.sub(n.reserved)
	n.owned = minNum(n.ownership, rest)
	rest = rest.sub(n.owned)
	children := n.carve.sub(n.reserve).sub(n.ownership)
	if children.sign() == 0 {
		return rest, num{}
	}
	carved := minNum(children, rest)
	return rest.sub(carved), carved.quo(children)
}
