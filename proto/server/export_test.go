package server

// Routes lists the route table's methods and paths, so that a test can
// call every endpoint.
func (s *Server) Routes() [][2]string {
	var out [][2]string
	for _, rt := range s.table() {
		out = append(out, [2]string{rt.method, rt.path})
	}
	return out
}
