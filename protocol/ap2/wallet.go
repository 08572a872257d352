package ap2

import (
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Wallet makes checkout mandates: the test wallet of the demo agent and
// of the tests (a trusted platform provider signing with its profile key).
// It is the producing side of Verify, so both read the same format.
type Wallet struct {
	// Issuer signs the SD-JWT; IssuerKID is its kid in the agent profile.
	Issuer    *ecdsa.PrivateKey
	IssuerKID string
	// Holder signs the key binding (default: Issuer).
	Holder *ecdsa.PrivateKey
	// IssuerID is the iss claim (the agent profile URL).
	IssuerID string
}

// MandateOptions shape one mandate; the zero value is a valid one.
type MandateOptions struct {
	// Lifetime is exp - now (default 10 minutes); negative makes an
	// expired mandate.
	Lifetime time.Duration
	// Now defaults to time.Now.
	Now time.Time
	// NoKeyBinding leaves the key-binding JWT out.
	NoKeyBinding bool
	// Nonce defaults to the checkout's id (tests bind a mandate to
	// another checkout with it).
	Nonce string
}

// Mandate makes the checkout mandate for checkout (the checkout response
// as received, with its ap2.merchant_authorization), presented to the
// merchant at audience (its origin) for the checkout's id.
func (w *Wallet) Mandate(checkout json.RawMessage, audience string, o MandateOptions) (string, error) {
	if w.Issuer == nil || w.IssuerKID == "" {
		return "", errors.New("ap2: the wallet needs an issuer key and its kid")
	}
	var c struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(checkout, &c); err != nil || c.ID == "" {
		return "", errors.New("ap2: the checkout has no id")
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	life := o.Lifetime
	if life == 0 {
		life = 10 * time.Minute
	}
	holder := w.Holder
	if holder == nil {
		holder = w.Issuer
	}
	disclosure, digest, err := disclosureOf("checkout", checkout)
	if err != nil {
		return "", err
	}
	cnf, err := jose.JSONWebKey{Key: &holder.PublicKey, Algorithm: string(jose.ES256)}.MarshalJSON()
	if err != nil {
		return "", err
	}
	claims := map[string]any{
		"iat": now.Unix(), "exp": now.Add(life).Unix(),
		"vct": "mandate.checkout", "_sd_alg": "sha-256", "_sd": []string{digest},
		"cnf": map[string]json.RawMessage{"jwk": cnf},
	}
	if w.IssuerID != "" {
		claims["iss"] = w.IssuerID
	}
	issuerJWT, err := signJWT(w.Issuer, w.IssuerKID, TypeIssuer, claims)
	if err != nil {
		return "", err
	}
	sd := issuerJWT + "~" + disclosure + "~"
	if o.NoKeyBinding {
		return issuerJWT + "~" + disclosure, nil
	}
	nonce := o.Nonce
	if nonce == "" {
		nonce = c.ID
	}
	kb, err := signJWT(holder, "", TypeKeyBinding, map[string]any{
		"iat": now.Unix(), "aud": audience, "nonce": nonce, "sd_hash": sdHash(sd),
	})
	if err != nil {
		return "", err
	}
	return sd + kb, nil
}

func disclosureOf(name string, value json.RawMessage) (string, string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", "", err
	}
	arr, err := json.Marshal([]any{base64.RawURLEncoding.EncodeToString(salt), name, value})
	if err != nil {
		return "", "", err
	}
	d := base64.RawURLEncoding.EncodeToString(arr)
	return d, sdHash(d), nil
}

func signJWT(key *ecdsa.PrivateKey, kid, typ string, claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	var k any = key
	if kid != "" {
		k = jose.JSONWebKey{Key: key, KeyID: kid}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		return "", err
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return obj.CompactSerialize()
}

// PublicJWK is key's public JWK with kid, as an agent profile publishes it.
func PublicJWK(key *ecdsa.PrivateKey, kid string) (json.RawMessage, error) {
	return jose.JSONWebKey{Key: &key.PublicKey, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}.MarshalJSON()
}
