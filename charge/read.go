package charge

import "github.com/ingot-hpc/ingot/internal/jsonread"

// ReadRequest reads a Request for a hand-written decoder (package
// jsonread's rules: it gives up on anything encoding/json might read
// otherwise): the server reads one in every lien request, the bank one in
// every lien it charges.
func ReadRequest(r *jsonread.Reader, v *Request) {
	for m := r.Object(); r.Member(m); {
		switch name := r.Name(); string(name) {
		case "wallclock_limit_seconds":
			v.WallclockLimitSeconds = r.Int(64)
		case "start":
			r.Time(&v.Start)
		default:
			readResources(r, name, &v.Resources)
		}
	}
}

// ReadUsage reads a Usage as ReadRequest reads a Request: the server reads
// one in every charge request.
func ReadUsage(r *jsonread.Reader, v *Usage) {
	for m := r.Object(); r.Member(m); {
		switch name := r.Name(); string(name) {
		case "wallclock_seconds":
			v.WallclockSeconds = r.Int(64)
		case "wallclock_limit_seconds":
			v.WallclockLimitSeconds = r.Int(64)
		case "cpu_seconds":
			v.CPUSeconds = r.Int(64)
		case "start":
			r.Time(&v.Start)
		case "end":
			r.Time(&v.End)
		case "state":
			r.Text(&v.State)
		default:
			readResources(r, name, &v.Resources)
		}
	}
}

// readResources reads a member of an embedded charge.Resources, failing on
// any other.
func readResources(r *jsonread.Reader, name []byte, v *Resources) {
	switch string(name) {
	case "processors":
		v.Processors = r.Int(64)
	case "nodes":
		v.Nodes = r.Int(64)
	case "gpus":
		v.GPUs = r.Int(64)
	case "memory_mb":
		v.MemoryMB = r.Int(64)
	case "disk_mb":
		v.DiskMB = r.Int(64)
	case "qos":
		v.QOS = r.Str()
	case "partition":
		v.Partition = r.Str()
	case "node_type":
		v.NodeType = r.Str()
	case "licenses":
		// encoding/json makes the map even for {}.
		v.Licenses = map[string]int64{}
		for m := r.Object(); r.Member(m); {
			license := string(r.Name())
			v.Licenses[license] = r.Int(64)
		}
	default:
		r.Fail()
	}
}
