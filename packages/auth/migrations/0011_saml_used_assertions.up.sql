-- The SAML assertions the ACS accepted, kept until they expire (their latest NotOnOrAfter and
-- the clock skew), so that each assertion signs in once, above all an unsolicited
-- (IdP-initiated) one, which no single-use relay state guards. Not in upstream: a table of its
-- own, which upstream's data neither needs nor reads.
CREATE TABLE IF NOT EXISTS {{ns}}saml_used_assertions (
  sso_provider_id uuid NOT NULL REFERENCES {{ns}}sso_providers (id) ON DELETE CASCADE,
  assertion_id text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (sso_provider_id, assertion_id),
  CONSTRAINT "assertion_id not empty" CHECK (char_length(assertion_id) > 0)
);
CREATE INDEX IF NOT EXISTS {{ns}}saml_used_assertions_expires_at_idx ON {{ns}}saml_used_assertions (expires_at);
