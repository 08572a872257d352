package checkout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	segjson "github.com/segmentio/encoding/json"

	"github.com/bcpdev/bcp/internal/apperr"
	"github.com/bcpdev/bcp/internal/bcpnames"
	"github.com/bcpdev/bcp/internal/ids"
	"github.com/bcpdev/bcp/internal/tenancy"
	checkoutv1 "github.com/bcpdev/bcp/proto/gen/bcp/checkout/v1"
	"github.com/bcpdev/bcp/protocol/bcp"
	"github.com/bcpdev/bcp/services/checkout/checkoutdb"
)

// Carts (br.dev.bcp.shopping.cart). A cart is priced by build exactly as a
// checkout is (catalog items, pricing totals and discount codes) and is
// stored as a bcp.Checkout without the checkout-only members (status,
// fulfillment, payment, order), which is the cart's shape. It never
// reserves stock and never takes payment. Its life is active, then
// canceled or converted (create_checkout with cart_id); a cart that is not
// active is not found, as are another agent's carts.

// cartTTL is how long a cart lives: carts are for browsing, longer than a
// checkout, and nothing is held for them.
const cartTTL = 7 * 24 * time.Hour

const (
	cartActive    = "active"
	cartCanceled  = "canceled"
	cartConverted = "converted"
)

type cart = checkoutdb.CheckoutCart

func errCartNotFound(id string) error { return apperr.NotFound(bcp.CodeNotFound, "no cart %q", id) }

// insertCart writes a new cart; with k, its key and answer too.
func (st store) insertCart(ctx context.Context, p checkoutdb.InsertCartParams, k *opKey) error {
	answer, err := k.answer(cartResult(p.State))
	if err != nil {
		return err
	}
	return st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		p.TenantID, p.Idem, p.IdemResponse = tid, k.arg(), answer
		kept, err := q.InsertCart(ctx, p)
		k.wrote(kept, true)
		return err
	})
}

func (st store) getCart(ctx context.Context, id string) (cart, error) {
	var c cart
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		var err error
		c, err = q.GetCart(ctx, checkoutdb.GetCartParams{TenantID: tid, ID: id})
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, errCartNotFound(id)
	}
	return c, err
}

// cartWrite runs one optimistic write of a cart; false: it changed (or
// left active) since it was read.
func (st store) cartWrite(ctx context.Context, fn func(q *checkoutdb.Queries, tid uuid.UUID) (int64, error)) (bool, error) {
	var n int64
	err := st.one(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) error {
		var err error
		n, err = fn(q, tid)
		return err
	})
	return n == 1, err
}

// updateCart rewrites an active cart, with k's key and answer; false: it
// changed (or left active) since it was read.
func (st store) updateCart(ctx context.Context, c cart, request, state []byte, k *opKey) (bool, error) {
	return keyedWrite(ctx, st, k, true, cartResult(state), func(q *checkoutdb.Queries, tid uuid.UUID, idem, answer []byte) (int64, bool, error) {
		row, err := q.UpdateCart(ctx, checkoutdb.UpdateCartParams{TenantID: tid, ID: c.ID, Version: c.Version, Request: request, State: state,
			Idem: idem, IdemResponse: answer})
		return row.Written, row.Kept, err
	})
}

// cancelCart ends an active cart (answering it as it was), with k's key
// and answer; false: it changed (or left active) since it was read.
func (st store) cancelCart(ctx context.Context, c cart, k *opKey) (bool, error) {
	return keyedWrite(ctx, st, k, true, cartResult(c.State), func(q *checkoutdb.Queries, tid uuid.UUID, idem, answer []byte) (int64, bool, error) {
		row, err := q.CancelCart(ctx, checkoutdb.CancelCartParams{TenantID: tid, ID: c.ID, Version: c.Version, Idem: idem, IdemResponse: answer})
		return row.Written, row.Kept, err
	})
}

// liveCart reads a cart the agent may use: its own (the checkout's owned
// rule), active and not expired; anything else is not found.
func (s *Service) liveCart(ctx context.Context, id, owner string) (cart, error) {
	c, err := s.store.getCart(ctx, id)
	if err != nil {
		return c, err
	}
	if (owner != "" && c.AgentProfileUrl != owner) || c.Status != cartActive || !s.now().Before(c.ExpiresAt) {
		return c, errCartNotFound(id)
	}
	return c, nil
}

// decodeCart reads a cart payload into the checkout shape build prices.
// Checkout-only members a client might send anyway are dropped.
func decodeCart(raw []byte) (*bcp.Checkout, error) {
	req := &bcp.Checkout{}
	if len(raw) == 0 {
		return nil, apperr.Invalid("cart", "cart_required", "cart is required")
	}
	if err := bcp.DecodeCheckout(raw, req); err != nil {
		return nil, apperr.Invalid("cart", "invalid_cart", "cart is not a valid BCP cart: %v", err)
	}
	if req.ID != "" {
		return nil, apperr.Invalid("cart.id", "id_not_allowed", "the cart payload must not contain id")
	}
	if len(req.LineItems) == 0 {
		return nil, apperr.Invalid("cart.line_items", "line_items_required", "a cart needs at least one line item")
	}
	for i, l := range req.LineItems {
		if l.Item.ID == "" || l.Quantity < 1 {
			return nil, apperr.Invalid("cart.line_items["+itoa(i)+"]", "invalid_line_item", "each line needs item.id and a quantity of at least 1")
		}
	}
	req.Fulfillment, req.Payment, req.AP2 = nil, nil, nil
	return req, nil
}

// priceCart prices a cart request as a checkout would be priced, without
// fulfillment (a cart has none) and without the messages that only say
// what a completion still needs (buyer email, delivery).
func (s *Service) priceCart(ctx context.Context, agent agentInfo, id string, req, prev *bcp.Checkout, tenantID string) (*built, error) {
	agent.capabilities = slices.DeleteFunc(slices.Clone(agent.capabilities), func(c string) bool { return c == bcpnames.Fulfillment })
	b, err := s.build(ctx, agent, id, req, prev, tenantID, false)
	if err != nil || b.noItems {
		return b, err
	}
	c := b.checkout
	c.Messages = slices.DeleteFunc(c.Messages, func(m bcp.Message) bool {
		return m.Type == bcp.MessageError && (m.Code == bcp.CodeMissing || m.Code == "invalid_email")
	})
	c.Status, c.Fulfillment, c.Payment, c.Order, c.ContinueURL = "", nil, nil, nil, ""
	return b, nil
}

func cartResult(state []byte) *checkoutv1.CartResult { return &checkoutv1.CartResult{CartJson: state} }

func cartErrorResult(code, baseURL string) (*checkoutv1.CartResult, error) {
	b, err := json.Marshal(bcp.ErrorResponse{Messages: []bcp.Message{nothingToSell(code)}, ContinueURL: baseURL + "/"})
	if err != nil {
		return nil, err
	}
	return &checkoutv1.CartResult{CartJson: b, ErrorResponse: true}, nil
}

// CreateCart prices and stores a new cart. With every requested item
// unavailable it creates nothing and returns an error_response.
func (s *Service) CreateCart(ctx context.Context, r *connect.Request[checkoutv1.CreateCartRequest]) (*connect.Response[checkoutv1.CreateCartResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	agent, err := agentFrom(r.Msg.GetAgent())
	if err != nil {
		return nil, err
	}
	req, err := decodeCart(r.Msg.GetCartJson())
	if err != nil {
		return nil, err
	}
	k, err := newOpKey(r.Msg.GetIdempotency(), s.now())
	if err != nil {
		return nil, err
	}
	res, err := keyed(ctx, s.store, k, func() (*checkoutv1.CartResult, error) {
		id := ids.New("cart")
		b, err := s.priceCart(ctx, agent, id, req, nil, tid.String())
		if err != nil {
			return nil, err
		}
		if b.noItems {
			return cartErrorResult(b.noItemsBy, agent.baseURL)
		}
		expires := s.now().UTC().Truncate(time.Second).Add(cartTTL)
		b.checkout.ExpiresAt = &expires
		state, reqJSON, err := encodeBoth(b.checkout, b.request)
		if err != nil {
			return nil, err
		}
		if err := s.store.insertCart(ctx, checkoutdb.InsertCartParams{ID: id, AgentProfileUrl: agent.profileURL, Request: reqJSON, State: state, ExpiresAt: expires}, k); err != nil {
			return nil, err
		}
		return cartResult(state), nil
	}, newCartResult)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.CreateCartResponse{Result: res}), nil
}

func newCartResult() *checkoutv1.CartResult { return &checkoutv1.CartResult{} }

// GetCart returns the cart as last priced.
func (s *Service) GetCart(ctx context.Context, r *connect.Request[checkoutv1.GetCartRequest]) (*connect.Response[checkoutv1.GetCartResponse], error) {
	c, err := s.liveCart(ctx, r.Msg.GetId(), r.Msg.GetAgent().GetProfileUrl())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.GetCartResponse{Result: cartResult(c.State)}), nil
}

// UpdateCart replaces the cart's writable members (full replacement) and
// prices it again; echoed line ids are kept.
func (s *Service) UpdateCart(ctx context.Context, r *connect.Request[checkoutv1.UpdateCartRequest]) (*connect.Response[checkoutv1.UpdateCartResponse], error) {
	tid, err := tenancy.From(ctx)
	if err != nil {
		return nil, err
	}
	agent, err := agentFrom(r.Msg.GetAgent())
	if err != nil {
		return nil, err
	}
	req, err := decodeCart(r.Msg.GetCartJson())
	if err != nil {
		return nil, err
	}
	k, err := newOpKey(r.Msg.GetIdempotency(), s.now())
	if err != nil {
		return nil, err
	}
	res, err := keyed(ctx, s.store, k, func() (*checkoutv1.CartResult, error) {
		c, err := s.liveCart(ctx, r.Msg.GetId(), agent.profileURL)
		if err != nil {
			return nil, err
		}
		prev := &bcp.Checkout{}
		if err := bcp.DecodeCheckout(c.State, prev); err != nil {
			return nil, err
		}
		b, err := s.priceCart(ctx, agent, c.ID, req, prev, tid.String())
		if err != nil {
			return nil, err
		}
		b.checkout.ExpiresAt = prev.ExpiresAt
		state, reqJSON, err := encodeBoth(b.checkout, b.request)
		if err != nil {
			return nil, err
		}
		ok, err := s.store.updateCart(ctx, c, reqJSON, state, k)
		if err == nil && !ok {
			err = apperr.New(apperr.KindAborted, "concurrent_update", "the cart changed while this update was being processed; retry")
		}
		if err != nil {
			return nil, err
		}
		return cartResult(state), nil
	}, newCartResult)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.UpdateCartResponse{Result: res}), nil
}

// CancelCart ends an active cart and returns it as it was; it is not found
// afterwards.
func (s *Service) CancelCart(ctx context.Context, r *connect.Request[checkoutv1.CancelCartRequest]) (*connect.Response[checkoutv1.CancelCartResponse], error) {
	k, err := newOpKey(r.Msg.GetIdempotency(), s.now())
	if err != nil {
		return nil, err
	}
	res, err := keyed(ctx, s.store, k, func() (*checkoutv1.CartResult, error) {
		c, err := s.liveCart(ctx, r.Msg.GetId(), r.Msg.GetAgent().GetProfileUrl())
		if err != nil {
			return nil, err
		}
		ok, err := s.store.cancelCart(ctx, c, k)
		if err == nil && !ok {
			// Converted, canceled or updated meanwhile: whatever it is now,
			// only an active cart can be canceled.
			if _, err = s.liveCart(ctx, c.ID, ""); err == nil {
				err = apperr.New(apperr.KindAborted, "concurrent_update", "the cart changed while it was being canceled; retry")
			}
		}
		if err != nil {
			return nil, err
		}
		return cartResult(c.State), nil
	}, newCartResult)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&checkoutv1.CancelCartResponse{Result: res}), nil
}

// cartIDOf reads cart_id from a create_checkout payload ("" when absent).
// raw is a JSON object decodeRequest has read already: one that cannot
// name cart_id (no "cart_id" in any case, no \u escape that could spell
// it: the decoder matches member names case-insensitively) is not parsed
// a second time.
func cartIDOf(raw []byte) (string, error) {
	if !bytes.Contains(raw, []byte(`\u`)) && !containsFoldASCII(raw, "cart_id") {
		return "", nil
	}
	var p struct {
		CartID *string `json:"cart_id"`
	}
	if err := segjson.Unmarshal(raw, &p); err != nil {
		return "", apperr.Invalid("checkout.cart_id", "invalid_cart_id", "cart_id must be a string")
	}
	if p.CartID == nil {
		return "", nil
	}
	if *p.CartID == "" {
		return "", apperr.Invalid("checkout.cart_id", "invalid_cart_id", "cart_id must not be empty")
	}
	return *p.CartID, nil
}

// containsFoldASCII says whether b holds s, an ASCII string, in any ASCII
// case.
func containsFoldASCII(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if b[i]|0x20 == s[0]|0x20 && bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
			return true
		}
	}
	return false
}

// fromCart is the checkout request of a conversion: the cart's line items,
// buyer, context and discount codes replace the request's (UCP: the
// business uses the cart's contents and ignores overlapping fields); the
// rest (fulfillment, signals, attribution) is the request's.
func fromCart(cartReq, req *bcp.Checkout) *bcp.Checkout {
	out := *req
	out.LineItems = make([]bcp.LineItem, 0, len(cartReq.LineItems))
	for _, l := range cartReq.LineItems {
		out.LineItems = append(out.LineItems, bcp.LineItem{Item: bcp.Item{ID: l.Item.ID}, Quantity: l.Quantity})
	}
	if cartReq.Buyer != nil {
		out.Buyer = cartReq.Buyer
	}
	if cartReq.Context != nil {
		out.Context = cartReq.Context
	}
	if cartReq.Discounts != nil {
		out.Discounts = cartReq.Discounts
	}
	return &out
}

// convertCart is create_checkout with cart_id. The cart is marked
// converted with the new checkout's id before the checkout is written, so
// two conversions of one cart open one checkout: the one that loses the
// compare-and-swap, or a retry after a crash in between, finds the cart
// converted and returns (or opens, under that same id) its checkout. A
// conversion that opens nothing gives the cart back (openReserved).
func (s *Service) convertCart(ctx context.Context, tid uuid.UUID, agent agentInfo, cartID string, req *bcp.Checkout) (*checkoutv1.CheckoutResult, error) {
	for range 3 {
		c, err := s.store.getCart(ctx, cartID)
		if err != nil {
			return nil, err
		}
		if c.AgentProfileUrl != agent.profileURL {
			return nil, errCartNotFound(cartID)
		}
		cartReq := &bcp.Checkout{}
		if err := bcp.DecodeCheckout(c.Request, cartReq); err != nil {
			return nil, err
		}
		switch {
		case c.Status == cartConverted && c.CheckoutID != nil:
			sess, err := s.store.get(ctx, *c.CheckoutID)
			if err != nil && apperr.As(err).Kind == apperr.KindNotFound {
				// Its checkout was never written (a crash in between, or a
				// conversion whose undo failed): open it now.
				return s.openReserved(ctx, tid, agent, c.ID, *c.CheckoutID, fromCart(cartReq, req))
			}
			if err != nil {
				return nil, err
			}
			if bcp.Terminal(sess.Status) {
				// The checkout it became was completed or canceled: the cart is gone.
				return nil, errCartNotFound(cartID)
			}
			return &checkoutv1.CheckoutResult{CheckoutJson: sess.State, Status: sess.Status}, nil
		case c.Status != cartActive || !s.now().Before(c.ExpiresAt):
			return nil, errCartNotFound(cartID)
		}
		id := ids.New("chk")
		ok, err := s.store.cartWrite(ctx, func(q *checkoutdb.Queries, tid uuid.UUID) (int64, error) {
			return q.ConvertCart(ctx, checkoutdb.ConvertCartParams{TenantID: tid, ID: c.ID, Version: c.Version, CheckoutID: &id})
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // updated, canceled or converted meanwhile: read it again
		}
		return s.openReserved(ctx, tid, agent, c.ID, id, fromCart(cartReq, req))
	}
	return nil, apperr.New(apperr.KindAborted, "concurrent_update", "the cart changed while it was being converted; retry")
}

// openReserved opens the checkout cart cartID was converted into, under
// its reserved id. When none is opened (nothing left to sell, or the
// create failed) the conversion is undone: the cart stays the agent's,
// whether this conversion marked it or an earlier one did and never wrote
// its checkout.
func (s *Service) openReserved(ctx context.Context, tid uuid.UUID, agent agentInfo, cartID, id string, req *bcp.Checkout) (*checkoutv1.CheckoutResult, error) {
	res, err := s.openConverted(ctx, tid, agent, id, req)
	if err != nil || res.GetErrorResponse() {
		if _, rerr := s.store.cartWrite(context.WithoutCancel(ctx), func(q *checkoutdb.Queries, tid uuid.UUID) (int64, error) {
			return q.RevertCartConversion(ctx, checkoutdb.RevertCartConversionParams{TenantID: tid, ID: cartID, CheckoutID: id})
		}); rerr != nil && err == nil {
			err = rerr
		}
	}
	return res, err
}

// openConverted opens the checkout of a conversion under its reserved id;
// when a concurrent conversion wrote it first, that one is returned.
func (s *Service) openConverted(ctx context.Context, tid uuid.UUID, agent agentInfo, id string, req *bcp.Checkout) (*checkoutv1.CheckoutResult, error) {
	res, err := s.open(ctx, tid, agent, id, req, nil)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		sess, err := s.store.get(ctx, id)
		if err != nil {
			return nil, err
		}
		return &checkoutv1.CheckoutResult{CheckoutJson: sess.State, Status: sess.Status}, nil
	}
	return res, err
}
