-- Passkeys (upstream migration 20260302000000_add_passkeys): the credentials users register, and
-- the pending WebAuthn ceremonies. A challenge row is deleted when it is answered (single use);
-- the periodic clean-up deletes the expired ones.
CREATE TABLE {{ns}}webauthn_credentials (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  credential_id bytea NOT NULL,
  public_key bytea NOT NULL,
  attestation_type text NOT NULL DEFAULT '',
  aaguid uuid NULL,
  sign_count bigint NOT NULL DEFAULT 0,
  transports jsonb NOT NULL DEFAULT '[]'::jsonb,
  backup_eligible boolean NOT NULL DEFAULT false,
  backed_up boolean NOT NULL DEFAULT false,
  friendly_name text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  last_used_at timestamptz NULL
);
CREATE UNIQUE INDEX {{ns}}webauthn_credentials_credential_id_key
  ON {{ns}}webauthn_credentials (credential_id);
CREATE INDEX {{ns}}webauthn_credentials_user_id_idx ON {{ns}}webauthn_credentials (user_id);

CREATE TABLE {{ns}}webauthn_challenges (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NULL REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  challenge_type text NOT NULL CHECK (challenge_type IN ('signup', 'registration', 'authentication')),
  session_data jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX {{ns}}webauthn_challenges_user_id_idx ON {{ns}}webauthn_challenges (user_id);
CREATE INDEX {{ns}}webauthn_challenges_expires_at_idx ON {{ns}}webauthn_challenges (expires_at);
