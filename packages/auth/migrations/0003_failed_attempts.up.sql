-- Failed attempts per target, shared by every instance (Gatehouse only; upstream keeps no such
-- count): wrong codes of one one-time code, reauthentication nonce or MFA challenge, which
-- invalidate it after SECURITY_OTP_MAX_ATTEMPTS, and the back-offs of MFA factors and of password
-- sign-ins per account. `target` names what was attempted (`otp:<token type>:<user id>:<sent at>`,
-- `mfa_factor:<id>`, `password:<sha-256 of the account>`, ...), never a secret; a row is forgotten
-- at `expires_at` and removed by later failures.
CREATE TABLE {{ns}}failed_attempts (
  target text NOT NULL PRIMARY KEY,
  failures integer NOT NULL CHECK (failures > 0),
  last_failed_at timestamptz NOT NULL,
  blocked_until timestamptz NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX {{ns}}failed_attempts_expires_at_idx ON {{ns}}failed_attempts (expires_at);

-- Upstream declares mfa_factors.last_challenged_at UNIQUE; nothing reads it as a key, and with
-- millisecond clocks two factors challenged in the same instant collided (a 500 after the SMS
-- had gone out). The column keeps its name and meaning.
DO $$
DECLARE
  name text;
BEGIN
  SELECT c.conname INTO name
  FROM pg_constraint c
  JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
  WHERE c.conrelid = '{{ns}}mfa_factors'::regclass AND c.contype = 'u'
    AND a.attname = 'last_challenged_at' AND cardinality(c.conkey) = 1;
  IF name IS NOT NULL THEN
    EXECUTE format('ALTER TABLE {{ns}}mfa_factors DROP CONSTRAINT %I', name);
  END IF;
END $$;
