package payments

import "context"

// HookSecret exposes a handler's webhook secret to the tests, which play
// a PSP signing notifications.
func (s *Service) HookSecret(ctx context.Context, handlerID string) ([]byte, error) {
	_, secret, err := s.hookByHandler(ctx, handlerID)
	return secret, err
}

// HandlerCacheStats exposes the handler cache's counters and whether its
// change feed is connected.
func (s *Service) HandlerCacheStats() (hits, misses int64, watched bool) {
	st := s.handlerCache.Stats()
	return st.Hits, st.Misses, st.Watched
}
