// Package simcontrol is a client of the PSP simulator's control API (the
// sandbox bank's controls: accounts, payments, faults, ledgers), for the
// payments service's sandbox accounts, bcpctl and the chaos tool. JSON
// over HTTPS with the simulator's bearer token; nothing of the server.
package simcontrol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client calls one simulator's control API.
type Client struct {
	// BaseURL is the control listener's origin (https://host:port).
	BaseURL string
	Token   string
	HTTP    *http.Client
}

// Error is a control API refusal.
type Error struct {
	Status  int
	Code    string // the answer's "error", when it has one
	Message string
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("the PSP simulator answered %d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("the PSP simulator answered %d: %s", e.Status, e.Message)
}

// Do sends in (nil: no body) as JSON and decodes a 2xx answer into out
// (nil: discarded); any other answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		e := &Error{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
		var ce struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &ce) == nil && ce.Error != "" {
			e.Code, e.Message = ce.Error, ce.Message
		}
		return e
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
