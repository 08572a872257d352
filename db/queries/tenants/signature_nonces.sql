-- Replay cache of agent signature nonces (issue 32, migration 00048).

-- ClaimSignatureNonce records a nonce for @valid_for_seconds in one
-- statement: 1 row when it is new (or its earlier use has expired), 0 when
-- a live row holds it, i.e. the signature is a replay. The clock is the
-- database's, the same for every edge.
-- name: ClaimSignatureNonce :execrows
INSERT INTO tenants.signature_nonces AS n (tenant_id, key, expires_at)
VALUES (@tenant_id, @key, statement_timestamp() + make_interval(secs => sqlc.arg(valid_for_seconds)::float8))
ON CONFLICT (tenant_id, key) DO UPDATE SET expires_at = EXCLUDED.expires_at
  WHERE n.expires_at <= statement_timestamp();

-- SweepSignatureNonces deletes up to @max_rows expired nonces of every
-- tenant (run in the 'signature_nonce_sweep' scope, whose policies show
-- it expired rows only).
-- name: SweepSignatureNonces :execrows
DELETE FROM tenants.signature_nonces
WHERE (tenant_id, key) IN (
  SELECT s.tenant_id, s.key FROM tenants.signature_nonces s
  WHERE s.expires_at < statement_timestamp()
  ORDER BY s.expires_at
  LIMIT sqlc.arg(max_rows)::int
);
