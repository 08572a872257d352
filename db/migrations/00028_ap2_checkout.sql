-- +goose Up
-- AP2 mandates (issue 22). The checkout mandate a completion was verified
-- with is recorded as its digest and claims, never the mandate itself:
-- written by the claim that starts the payment (replaced by each claim, so
-- it is the one of the attempt that pays) and handed to the order.
ALTER TABLE checkout.sessions ADD COLUMN ap2_mandate jsonb;
-- Like every column of sessions (00022): the largest statistics target
-- sets ANALYZE's sample, and the default would bring back the large one.
ALTER TABLE checkout.sessions ALTER COLUMN ap2_mandate SET STATISTICS 10;

-- +goose Down
ALTER TABLE checkout.sessions DROP COLUMN ap2_mandate;
