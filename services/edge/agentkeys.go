package edge

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/bcpdev/bcp/services/edge/agentauth"
	"github.com/bcpdev/bcp/services/edge/agentprofile"
)

// profileKeys gives the authenticator the signing keys of agent profiles,
// from the same cached fetcher the negotiation uses.
type profileKeys struct{ f *agentprofile.Fetcher }

func (k profileKeys) SigningKeys(ctx context.Context, url string, dev, force bool) ([]json.RawMessage, error) {
	get := k.f.Get
	if force {
		get = k.f.ForceRefresh
	}
	p, err := get(ctx, url, dev)
	var pe *agentprofile.Error
	if errors.As(err, &pe) {
		return nil, &agentauth.ProfileError{Code: pe.Code, Message: pe.Message, Status: pe.HTTPStatus(), Err: err}
	}
	if err != nil {
		return nil, err
	}
	return p.SigningKeys(), nil
}
