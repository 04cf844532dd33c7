-- The OAuth 2.1 / OpenID Connect provider (OAUTH_SERVER_*), in upstream's final shape
-- (20250731150234_add_oauth_clients_table through 20260121000000_add_token_endpoint_auth_method):
-- the registered clients (client_id is the row's id; client_secret_hash is base64url(sha256) of
-- the secret, never the secret), the authorization requests waiting for consent or holding a
-- code (the code stored as base64url(sha256), where upstream stores it as issued), the consents
-- users gave, and the sessions an OAuth client's tokens belong to
-- (sessions.oauth_client_id, sessions.scopes). Data moves both ways with upstream.
CREATE TYPE {{ns}}oauth_registration_type AS ENUM ('dynamic', 'manual');
CREATE TYPE {{ns}}oauth_client_type AS ENUM ('public', 'confidential');
CREATE TYPE {{ns}}oauth_authorization_status AS ENUM ('pending', 'approved', 'denied', 'expired');
CREATE TYPE {{ns}}oauth_response_type AS ENUM ('code');

CREATE TABLE {{ns}}oauth_clients (
  id uuid NOT NULL PRIMARY KEY,
  client_secret_hash text NULL,
  registration_type {{ns}}oauth_registration_type NOT NULL,
  redirect_uris text NOT NULL,
  grant_types text NOT NULL,
  client_name text NULL CHECK (char_length(client_name) <= 1024),
  client_uri text NULL CHECK (char_length(client_uri) <= 2048),
  logo_uri text NULL CHECK (char_length(logo_uri) <= 2048),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz NULL,
  client_type {{ns}}oauth_client_type NOT NULL DEFAULT 'confidential',
  token_endpoint_auth_method text NOT NULL
    CHECK (token_endpoint_auth_method IN ('client_secret_basic', 'client_secret_post', 'none'))
);
CREATE INDEX {{ns}}oauth_clients_deleted_at_idx ON {{ns}}oauth_clients (deleted_at);

CREATE TABLE {{ns}}oauth_authorizations (
  id uuid NOT NULL PRIMARY KEY,
  authorization_id text NOT NULL UNIQUE,
  client_id uuid NOT NULL REFERENCES {{ns}}oauth_clients (id) ON DELETE CASCADE,
  user_id uuid NULL REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  redirect_uri text NOT NULL CHECK (char_length(redirect_uri) <= 2048),
  scope text NOT NULL CHECK (char_length(scope) <= 4096),
  state text NULL CHECK (char_length(state) <= 4096),
  resource text NULL CHECK (char_length(resource) <= 2048),
  code_challenge text NULL CHECK (char_length(code_challenge) <= 128),
  code_challenge_method {{ns}}code_challenge_method NULL,
  response_type {{ns}}oauth_response_type NOT NULL DEFAULT 'code',
  status {{ns}}oauth_authorization_status NOT NULL DEFAULT 'pending',
  authorization_code text NULL UNIQUE CHECK (char_length(authorization_code) <= 255),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  approved_at timestamptz NULL,
  nonce text NULL CHECK (char_length(nonce) <= 255),
  -- Gatehouse's (nullable, ignored by upstream): the request's `prompt`, and the session its
  -- code was exchanged for (a second exchange of the code ends that session, RFC 6749 §4.1.2).
  prompt text NULL CHECK (char_length(prompt) <= 255),
  session_id uuid NULL,
  CHECK (expires_at > created_at)
);
CREATE INDEX {{ns}}oauth_auth_pending_exp_idx ON {{ns}}oauth_authorizations (expires_at)
  WHERE status = 'pending';

CREATE TABLE {{ns}}oauth_consents (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  client_id uuid NOT NULL REFERENCES {{ns}}oauth_clients (id) ON DELETE CASCADE,
  scopes text NOT NULL CHECK (char_length(scopes) <= 2048 AND char_length(trim(scopes)) > 0),
  granted_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz NULL CHECK (revoked_at IS NULL OR revoked_at >= granted_at),
  UNIQUE (user_id, client_id)
);
CREATE INDEX {{ns}}oauth_consents_user_order_idx ON {{ns}}oauth_consents (user_id, granted_at DESC);

ALTER TABLE {{ns}}sessions
  ADD COLUMN IF NOT EXISTS oauth_client_id uuid NULL REFERENCES {{ns}}oauth_clients (id) ON DELETE CASCADE,
  ADD COLUMN IF NOT EXISTS scopes text NULL;
CREATE INDEX {{ns}}sessions_oauth_client_id_idx ON {{ns}}sessions (oauth_client_id);
