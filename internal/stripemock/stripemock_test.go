package stripemock_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bcpdev/bcp/internal/stripemock"
)

func get(t *testing.T, url, key string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, string(b), err
}

func TestStartServesOnLoopbackAndStopsAtCleanup(t *testing.T) {
	var base string
	t.Run("running", func(t *testing.T) {
		base = stripemock.Start(t)
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			t.Fatalf("base URL %q is not on 127.0.0.1", base)
		}
		res, body, err := get(t, base+"/v1/balance", stripemock.TestKey)
		if err != nil {
			t.Fatal(err)
		}
		var bal struct {
			Object string `json:"object"`
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &bal) != nil || bal.Object != "balance" {
			t.Fatalf("GET /v1/balance: %d %s", res.StatusCode, body)
		}
		if v := res.Header.Get("Stripe-Mock-Version"); v == "" {
			t.Fatal("no Stripe-Mock-Version header: not stripe-mock?")
		}
		// Only test-mode keys are accepted: a live key is refused with 401.
		res, body, err = get(t, base+"/v1/balance", "sk_live_123")
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		if res.StatusCode != http.StatusUnauthorized || json.Unmarshal([]byte(body), &e) != nil || e.Error.Type != "invalid_request_error" {
			t.Fatalf("live key: %d %s", res.StatusCode, body)
		}
	})
	if _, _, err := get(t, base+"/v1/balance", stripemock.TestKey); err == nil {
		t.Fatal("stripe-mock still answers after its test ended")
	}
}
