-- The TOTP time step of the last code a factor accepted, so that no code is accepted twice
-- (RFC 6238 §5.2). Upstream has no such column (it relies on one code per challenge); this one is
-- nullable and ignored by upstream, so data still moves both ways.
ALTER TABLE {{ns}}mfa_factors ADD COLUMN last_totp_step bigint NULL;
