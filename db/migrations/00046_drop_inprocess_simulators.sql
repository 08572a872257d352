-- +goose Up
-- Issue 31: the sandbox pays through the PSP simulator (schema pspsim),
-- reached over HTTPS by the same clients as production PSPs and
-- processors; the in-process simulators' tables in the payments schema
-- are gone with them.
DROP TABLE IF EXISTS payments.sim_card_refunds;
DROP TABLE IF EXISTS payments.sim_card_charges;
DROP TABLE IF EXISTS payments.sim_pix_webhooks;
DROP TABLE IF EXISTS payments.sim_pix_refunds;
DROP TABLE IF EXISTS payments.sim_pix;
DROP TABLE IF EXISTS payments.sim_pix_charges;

-- +goose Down
SELECT 'the in-process simulators are not restored; their state was sandbox data only';
