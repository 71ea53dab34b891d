package hfs

// assignQuotas is step 1: top-down, each node's subtree quota is split among
// its children by kind and capped by their limits; what the children do not
// take is the node's own quota. The root's subtree quota is the pool, capped
// by the root's own limit.
func assignQuotas(nodes []planNode, total num) {
	nodes[0].subtreeQuota = nodes[0].limit.capped(total)
	for i := range nodes { // pre-order: a parent is split before its children
		splitQuota(nodes, i)
	}
}

// splitQuota applies the LSF-style formulas of DESIGN section 4 to node i's
// children, with q its subtree quota:
//
//	static:  v · Sa/Σstatic       where Sa = min(Σstatic, q)
//	dynamic: f · Da/max(Σf, 1)    where Da = q − Sa
//	shares:  w · R/Σw             where R  = q − Sa − Σ dynamic quotas
//
// Each child is then capped by its limit; what a limit cuts off stays with
// node i (it is not handed to siblings). When there are no share children,
// or their weights sum to 0, R stays with node i too.
func splitQuota(nodes []planNode, i int) {
	n := &nodes[i]
	q := n.subtreeQuota
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

	n.ownQuota = q
	for _, c := range n.children {
		child := &nodes[c]
		child.subtreeQuota = child.limit.capped(child.value.mul(scale[child.kind]))
		n.ownQuota = n.ownQuota.sub(child.subtreeQuota)
	}
}
