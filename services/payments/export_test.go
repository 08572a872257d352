package payments

import "context"

// HookSecret exposes a handler's webhook secret to the tests, which play
// a PSP signing notifications.
func (s *Service) HookSecret(ctx context.Context, handlerID string) ([]byte, error) {
	_, secret, err := s.hookByHandler(ctx, handlerID)
	return secret, err
}
