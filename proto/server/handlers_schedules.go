package server

import (
	"fmt"

	"github.com/ingot-hpc/ingot/proto/api"
	"github.com/ingot-hpc/ingot/schedule"
)

// The allocation schedules: a manager makes and changes those of the
// accounts it manages; anyone reads those of the accounts it reads.

func (s *Server) scheduleList(c *call, _ api.NoQuery) (api.List[schedule.Schedule], error) {
	r, err := s.reachOf(c.r.Context(), c.client)
	if err != nil {
		return api.List[schedule.Schedule]{}, err
	}
	all, err := s.schedules.List(c.r.Context())
	out := []schedule.Schedule{}
	for _, sc := range all {
		if r.readsBelow(sc.Account) {
			out = append(out, sc)
		}
	}
	return api.ListOf(out), err
}

func (s *Server) addSchedule(c *call, spec api.ScheduleRequest) (schedule.Schedule, error) {
	if err := requireManages(c.client, "schedule allocations of", spec.Account); err != nil {
		return schedule.Schedule{}, err
	}
	return s.schedules.Add(c.r.Context(), c.req, spec)
}

// managedSchedule is schedule id if the client manages its account.
func (s *Server) managedSchedule(c *call, id uint64, what string) error {
	sc, err := s.schedules.Get(c.r.Context(), id)
	if err != nil {
		return err
	}
	return requireManages(c.client, fmt.Sprintf("%s schedule %d of", what, id), sc.Account)
}

func (s *Server) modifySchedule(c *call, m api.ScheduleModifyRequest) (schedule.Schedule, error) {
	if err := s.managedSchedule(c, m.Schedule, "change"); err != nil {
		return schedule.Schedule{}, err
	}
	return s.schedules.Modify(c.r.Context(), c.req, m.Schedule, m.Change)
}

func (s *Server) cancelSchedule(c *call, m api.ScheduleCancelRequest) (schedule.Schedule, error) {
	if err := s.managedSchedule(c, m.Schedule, "cancel"); err != nil {
		return schedule.Schedule{}, err
	}
	return s.schedules.Cancel(c.r.Context(), c.req, m.Schedule)
}

// upcoming are the periods to come of the schedules of the accounts the
// client reads (a user: of its projects' accounts).
func (s *Server) upcoming(c *call, q api.UpcomingQuery) (api.List[schedule.Period], error) {
	r, err := s.reachOf(c.r.Context(), c.client)
	if err != nil {
		return api.List[schedule.Period]{}, err
	}
	if q.Account != "" {
		if !r.readsBelow(q.Account) {
			return api.List[schedule.Period]{}, r.require(q.Account)
		}
	}
	all, err := s.schedules.Upcoming(c.r.Context(), q.Account, q.Until)
	out := []schedule.Period{}
	for _, p := range all {
		if r.readsBelow(p.Account) {
			out = append(out, p)
		}
	}
	return api.ListOf(out), err
}
