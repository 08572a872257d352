package payments

import "context"

// HandlerCacheStats exposes the handler cache's counters and whether its
// change feed is connected.
func (s *Service) HandlerCacheStats() (hits, misses int64, watched bool) {
	st := s.handlerCache.Stats()
	return st.Hits, st.Misses, st.Watched
}

// StaleKnownTransition plays a change that raced an optimistic one: it
// reads attempt id (pending), cancels it behind the reader's back, then
// asks transitionKnown, with the stale copy, to make it succeed if it is
// still pending. It returns the status transitionKnown reports.
func (s *Service) StaleKnownTransition(ctx context.Context, id string) (string, error) {
	known, err := s.getAttempt(ctx, id)
	if err != nil {
		return "", err
	}
	if _, err := s.transition(ctx, id, false, func(a *attempt) bool { a.Status = stCanceled; return true }); err != nil {
		return "", err
	}
	out, err := s.transitionKnown(ctx, &known, id, false, func(a *attempt) bool {
		if a.Status != stPending {
			return false
		}
		a.Status = stSucceeded
		return true
	})
	return out.Status, err
}
