-- Simulated PSP (BCB API Pix, receiver side).

-- name: SimGetCharge :one
SELECT * FROM payments.sim_pix_charges WHERE tenant_id = @tenant_id AND txid = @txid;

-- name: SimLockCharge :one
SELECT * FROM payments.sim_pix_charges WHERE tenant_id = @tenant_id AND txid = @txid FOR UPDATE;

-- name: SimCreateCharge :one
-- A charge the simulator has not seen: the common PUT /cob/{txid}, in one
-- statement. No row when the txid exists (a retry or a revision).
INSERT INTO payments.sim_pix_charges (tenant_id, txid, handler_id, status, valor, expiracao, chave, solicitacao, location, copia_e_cola, criacao, updated_at)
VALUES (@tenant_id, @txid, @handler_id, 'ATIVA', @valor, @expiracao, @chave, @solicitacao, @location, @copia_e_cola, @criacao, @criacao)
ON CONFLICT (tenant_id, txid) DO NOTHING
RETURNING *;

-- name: SimReviseCharge :exec
UPDATE payments.sim_pix_charges SET
  revisao = revisao + 1, valor = @valor, expiracao = @expiracao, chave = @chave, solicitacao = @solicitacao,
  copia_e_cola = @copia_e_cola, updated_at = @updated_at
WHERE tenant_id = @tenant_id AND txid = @txid;

-- name: SimSetChargeStatus :exec
UPDATE payments.sim_pix_charges SET status = @status, revisao = revisao + 1, updated_at = @updated_at
WHERE tenant_id = @tenant_id AND txid = @txid;

-- name: SimCountCharges :one
SELECT count(*) FROM payments.sim_pix_charges WHERE tenant_id = @tenant_id;

-- name: SimInsertPix :exec
INSERT INTO payments.sim_pix (tenant_id, e2e_id, txid, handler_id, valor, horario, info_pagador)
VALUES (@tenant_id, @e2e_id, @txid, @handler_id, @valor, @horario, @info_pagador);

-- name: SimGetPix :one
SELECT * FROM payments.sim_pix WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id;

-- name: SimLockPix :one
SELECT * FROM payments.sim_pix WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id FOR UPDATE;

-- name: SimListPixForCharge :many
SELECT * FROM payments.sim_pix WHERE tenant_id = @tenant_id AND txid = @txid ORDER BY horario;

-- name: SimGetChargeWithPix :one
-- A charge with its Pix and their refunds (as JSON: to_jsonb of the rows,
-- each Pix with a "refunds" array), as GET /cob/{txid} shows them: one
-- statement.
SELECT sqlc.embed(c), coalesce((
    SELECT jsonb_agg(to_jsonb(p) || jsonb_build_object('refunds', (
        SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.solicitacao, r.id), '[]'::jsonb)
        FROM payments.sim_pix_refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id
    )) ORDER BY p.horario)
    FROM payments.sim_pix p WHERE p.tenant_id = c.tenant_id AND p.txid = c.txid
), '[]'::jsonb)::jsonb AS pix
FROM payments.sim_pix_charges c WHERE c.tenant_id = @tenant_id AND c.txid = @txid;

-- name: SimGetPixWithRefunds :one
-- A Pix with its refunds (as JSON, to_jsonb of the rows), as GET
-- /pix/{e2eid} shows them: one statement.
SELECT sqlc.embed(p), (
    SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.solicitacao, r.id), '[]'::jsonb)
    FROM payments.sim_pix_refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id
)::jsonb AS refunds
FROM payments.sim_pix p WHERE p.tenant_id = @tenant_id AND p.e2e_id = @e2e_id;

-- name: SimInsertRefund :exec
INSERT INTO payments.sim_pix_refunds (tenant_id, e2e_id, id, rtr_id, valor, natureza, descricao, status, motivo, solicitacao, liquidacao)
VALUES (@tenant_id, @e2e_id, @id, @rtr_id, @valor, @natureza, @descricao, @status, @motivo, @solicitacao, sqlc.narg(liquidacao));

-- name: SimGetRefund :one
SELECT * FROM payments.sim_pix_refunds WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id AND id = @id;

-- name: SimListRefunds :many
SELECT * FROM payments.sim_pix_refunds WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id ORDER BY solicitacao, id;

-- name: SimUpsertWebhook :exec
INSERT INTO payments.sim_pix_webhooks (tenant_id, handler_id, chave, url)
VALUES (@tenant_id, @handler_id, @chave, @url)
ON CONFLICT (tenant_id, handler_id, chave) DO UPDATE SET url = EXCLUDED.url, updated_at = now();

-- name: SimGetDelivery :one
-- What a webhook delivery posts: the registered URL and the Pix named (as
-- to_jsonb of their rows, in the order asked), in one statement.
SELECT w.url, coalesce((
    SELECT jsonb_agg(to_jsonb(p) ORDER BY array_position(@e2e_ids::text[], p.e2e_id))
    FROM payments.sim_pix p WHERE p.tenant_id = w.tenant_id AND p.e2e_id = ANY(@e2e_ids::text[])
), '[]'::jsonb)::jsonb AS pix
FROM payments.sim_pix_webhooks w
WHERE w.tenant_id = @tenant_id AND w.handler_id = @handler_id AND w.chave = @chave;

-- Simulated card processor.

-- name: SimInsertCardCharge :execrows
INSERT INTO payments.sim_card_charges (tenant_id, id, idempotency_key, token_hash, amount, currency, status, decline_code)
VALUES (@tenant_id, @id, @idempotency_key, @token_hash, @amount, @currency, @status, @decline_code)
ON CONFLICT (tenant_id, idempotency_key) DO NOTHING;

-- name: SimChargeCard :one
-- A charge in one statement: a token that already paid under another key
-- is declined (@token_used_code), a new key is inserted, and an existing
-- key answers with its stored charge. When a concurrent call inserted the
-- key after this statement's snapshot, no row comes back (pgx.ErrNoRows)
-- and the caller reads it with SimGetCardChargeByKey.
WITH used AS (
  SELECT EXISTS (
    SELECT 1 FROM payments.sim_card_charges p
    WHERE p.tenant_id = @tenant_id AND p.token_hash = @token_hash AND p.idempotency_key <> @idempotency_key
      AND p.status IN ('approved', 'requires_action')
  ) AS used
), ins AS (
  INSERT INTO payments.sim_card_charges (tenant_id, id, idempotency_key, token_hash, amount, currency, status, decline_code)
  SELECT @tenant_id, @id, @idempotency_key, @token_hash, @amount, @currency,
         CASE WHEN used.used THEN 'declined' ELSE @status::text END,
         CASE WHEN used.used THEN @token_used_code::text ELSE @decline_code::text END
  FROM used
  ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
  RETURNING id, token_hash, amount, status, decline_code
)
SELECT id, token_hash, amount, status, decline_code FROM ins
UNION ALL
SELECT c.id, c.token_hash, c.amount, c.status, c.decline_code FROM payments.sim_card_charges c
WHERE c.tenant_id = @tenant_id AND c.idempotency_key = @idempotency_key AND NOT EXISTS (SELECT 1 FROM ins);

-- name: SimCancelCardByKey :one
-- Stops the sale under an idempotency key in one statement: a key that
-- never charged is recorded voided (SimChargeCard then answers with that
-- row, so it can never charge), a charge waiting for 3-D Secure is voided,
-- any other charge comes back as it is. As in SimChargeCard, a key a
-- concurrent call inserted after this statement's snapshot comes back as
-- no row (the caller reads it again).
WITH ins AS (
  INSERT INTO payments.sim_card_charges (tenant_id, id, idempotency_key, token_hash, amount, currency, status)
  VALUES (@tenant_id, @id, @idempotency_key, @token_hash, @amount, @currency, 'voided')
  ON CONFLICT (tenant_id, idempotency_key) DO UPDATE SET status = 'voided'
    WHERE payments.sim_card_charges.status = 'requires_action'
  RETURNING id, amount, status, decline_code
)
SELECT id, amount, status, decline_code FROM ins
UNION ALL
SELECT c.id, c.amount, c.status, c.decline_code FROM payments.sim_card_charges c
WHERE c.tenant_id = @tenant_id AND c.idempotency_key = @idempotency_key AND NOT EXISTS (SELECT 1 FROM ins);

-- name: SimGetCardChargeByKey :one
SELECT * FROM payments.sim_card_charges WHERE tenant_id = @tenant_id AND idempotency_key = @idempotency_key;

-- name: SimLockCardCharge :one
SELECT * FROM payments.sim_card_charges WHERE tenant_id = @tenant_id AND id = @id FOR UPDATE;

-- name: SimTokenCharged :one
-- Whether a token already paid under another idempotency key.
SELECT EXISTS (
  SELECT 1 FROM payments.sim_card_charges
  WHERE tenant_id = @tenant_id AND token_hash = @token_hash AND idempotency_key <> @idempotency_key
    AND status IN ('approved', 'requires_action')
)::boolean;

-- name: SimSetCardChargeStatus :exec
UPDATE payments.sim_card_charges SET status = @status WHERE tenant_id = @tenant_id AND id = @id;

-- name: SimAddCardRefunded :exec
UPDATE payments.sim_card_charges SET refunded = refunded + @amount WHERE tenant_id = @tenant_id AND id = @id;

-- name: SimInsertCardRefund :exec
INSERT INTO payments.sim_card_refunds (tenant_id, id, charge_id, idempotency_key, amount)
VALUES (@tenant_id, @id, @charge_id, @idempotency_key, @amount);

-- name: SimGetCardRefundByKey :one
SELECT * FROM payments.sim_card_refunds WHERE tenant_id = @tenant_id AND idempotency_key = @idempotency_key;

-- name: SimCountCardCharges :one
SELECT count(*) FROM payments.sim_card_charges WHERE tenant_id = @tenant_id;
