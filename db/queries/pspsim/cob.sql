-- PSP simulator: charges (cob), received Pix, refunds.

-- name: CreateCharge :one
-- PUT /cob/{txid} for a txid not seen yet, in one statement. No row when
-- the txid exists (a retry or a revision).
INSERT INTO pspsim.charges (tenant_id, txid, status, valor, modalidade_alteracao, expiracao, chave, solicitacao, location, copia_e_cola, criacao, updated_at)
VALUES (@tenant_id, @txid, 'ATIVA', @valor, @modalidade_alteracao, @expiracao, @chave, @solicitacao, @location, @copia_e_cola, @criacao, @criacao)
ON CONFLICT (tenant_id, txid) DO NOTHING
RETURNING *;

-- name: GetCharge :one
SELECT * FROM pspsim.charges WHERE tenant_id = @tenant_id AND txid = @txid;

-- name: LockCharge :one
SELECT * FROM pspsim.charges WHERE tenant_id = @tenant_id AND txid = @txid FOR UPDATE;

-- name: ReviseCharge :one
UPDATE pspsim.charges SET
  revisao = revisao + 1, valor = @valor, modalidade_alteracao = @modalidade_alteracao, expiracao = @expiracao,
  chave = @chave, solicitacao = @solicitacao, copia_e_cola = @copia_e_cola, updated_at = @updated_at
WHERE tenant_id = @tenant_id AND txid = @txid
RETURNING *;

-- name: SetChargeStatus :one
UPDATE pspsim.charges SET status = @status, revisao = revisao + 1, updated_at = @updated_at
WHERE tenant_id = @tenant_id AND txid = @txid
RETURNING *;

-- name: GetChargeWithPix :one
-- GET /cob/{txid}: the charge and its Pix (pix_json) in one statement.
SELECT sqlc.embed(c), coalesce((
  SELECT jsonb_agg(pspsim.pix_json(p) ORDER BY p.horario, p.e2e_id)
  FROM pspsim.pix p WHERE p.tenant_id = c.tenant_id AND p.txid = c.txid AND p.via_cob
), '[]'::jsonb)::jsonb AS pix
FROM pspsim.charges c WHERE c.tenant_id = @tenant_id AND c.txid = @txid;

-- name: InsertPix :exec
INSERT INTO pspsim.pix (tenant_id, e2e_id, txid, chave, valor, horario, info_pagador, via_cob)
VALUES (@tenant_id, @e2e_id, sqlc.narg(txid), @chave, @valor, @horario, @info_pagador, @via_cob);

-- name: GetPix :one
SELECT * FROM pspsim.pix WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id;

-- name: LockPix :one
SELECT * FROM pspsim.pix WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id FOR UPDATE;

-- name: GetPixJSON :one
-- GET /pix/{e2eid}: the Pix with its refunds.
SELECT pspsim.pix_json(p)::jsonb AS pix FROM pspsim.pix p WHERE p.tenant_id = @tenant_id AND p.e2e_id = @e2e_id;

-- name: ListPix :one
-- GET /pix: one page of the Pix received in [inicio, fim] that pass the
-- filters, and how many pass them, in one statement.
WITH m AS (
  SELECT p.* FROM pspsim.pix p
  WHERE p.tenant_id = @tenant_id AND p.horario BETWEEN @inicio AND @fim
    AND (sqlc.narg(txid)::text IS NULL OR p.txid = sqlc.narg(txid)::text)
    AND (sqlc.narg(txid_presente)::boolean IS NULL OR (p.txid IS NOT NULL) = sqlc.narg(txid_presente)::boolean)
    AND (sqlc.narg(devolucao_presente)::boolean IS NULL OR EXISTS (
      SELECT 1 FROM pspsim.refunds r WHERE r.tenant_id = p.tenant_id AND r.e2e_id = p.e2e_id
    ) = sqlc.narg(devolucao_presente)::boolean)
)
SELECT (SELECT count(*) FROM m)::bigint AS total, coalesce((
  SELECT jsonb_agg(pspsim.pix_json(pg) ORDER BY pg.horario, pg.e2e_id)
  FROM (SELECT * FROM m ORDER BY m.horario, m.e2e_id LIMIT @lim OFFSET @off) pg
), '[]'::jsonb)::jsonb AS pix;

-- name: GetRefund :one
SELECT * FROM pspsim.refunds WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id AND id = @id;

-- name: RefundedSum :one
-- What the refunds of a Pix take back, in centavos (NAO_REALIZADO ones
-- give nothing back).
SELECT coalesce(sum((replace(valor, '.', ''))::bigint), 0)::bigint AS centavos
FROM pspsim.refunds WHERE tenant_id = @tenant_id AND e2e_id = @e2e_id AND status <> 'NAO_REALIZADO';

-- name: InsertRefund :one
INSERT INTO pspsim.refunds (tenant_id, e2e_id, id, rtr_id, valor, natureza, descricao, status, motivo, solicitacao, liquidacao)
VALUES (@tenant_id, @e2e_id, @id, @rtr_id, @valor, @natureza, @descricao, @status, @motivo, @solicitacao, sqlc.narg(liquidacao))
RETURNING *;
