-- Gatehouse auth: the tables of Supabase Auth (GoTrue), same names and columns, so that existing
-- data can be moved over. {{ns}} is the DB_NAMESPACE table prefix ("" or "<namespace>_").

CREATE TABLE {{ns}}users (
  instance_id uuid NULL,
  id uuid NOT NULL PRIMARY KEY,
  aud varchar(255) NULL,
  role varchar(255) NULL,
  email varchar(255) NULL,
  encrypted_password varchar(255) NULL,
  email_confirmed_at timestamptz NULL,
  invited_at timestamptz NULL,
  confirmation_token varchar(255) NULL DEFAULT '',
  confirmation_sent_at timestamptz NULL,
  recovery_token varchar(255) NULL DEFAULT '',
  recovery_sent_at timestamptz NULL,
  email_change_token_new varchar(255) NULL DEFAULT '',
  email_change varchar(255) NULL DEFAULT '',
  email_change_sent_at timestamptz NULL,
  last_sign_in_at timestamptz NULL,
  raw_app_meta_data jsonb NULL,
  raw_user_meta_data jsonb NULL,
  is_super_admin boolean NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  phone text NULL UNIQUE DEFAULT NULL,
  phone_confirmed_at timestamptz NULL,
  phone_change text NULL DEFAULT '',
  phone_change_token varchar(255) NULL DEFAULT '',
  phone_change_sent_at timestamptz NULL,
  confirmed_at timestamptz GENERATED ALWAYS AS (LEAST(email_confirmed_at, phone_confirmed_at)) STORED,
  email_change_token_current varchar(255) NULL DEFAULT '',
  email_change_confirm_status smallint NULL DEFAULT 0
    CHECK (email_change_confirm_status >= 0 AND email_change_confirm_status <= 2),
  banned_until timestamptz NULL,
  reauthentication_token varchar(255) NULL DEFAULT '',
  reauthentication_sent_at timestamptz NULL,
  is_sso_user boolean NOT NULL DEFAULT false,
  deleted_at timestamptz NULL,
  is_anonymous boolean NOT NULL DEFAULT false
);
CREATE UNIQUE INDEX {{ns}}users_email_partial_key ON {{ns}}users (email) WHERE is_sso_user = false;
CREATE INDEX {{ns}}users_instance_id_email_idx ON {{ns}}users (instance_id, lower(email));
CREATE INDEX {{ns}}users_instance_id_idx ON {{ns}}users (instance_id);
CREATE INDEX {{ns}}users_is_anonymous_idx ON {{ns}}users (is_anonymous);
CREATE INDEX {{ns}}users_created_at_idx ON {{ns}}users (created_at DESC);
CREATE UNIQUE INDEX {{ns}}confirmation_token_idx ON {{ns}}users (confirmation_token)
  WHERE confirmation_token !~ '^[0-9 ]*$';
CREATE UNIQUE INDEX {{ns}}recovery_token_idx ON {{ns}}users (recovery_token)
  WHERE recovery_token !~ '^[0-9 ]*$';
CREATE UNIQUE INDEX {{ns}}email_change_token_current_idx ON {{ns}}users (email_change_token_current)
  WHERE email_change_token_current !~ '^[0-9 ]*$';
CREATE UNIQUE INDEX {{ns}}email_change_token_new_idx ON {{ns}}users (email_change_token_new)
  WHERE email_change_token_new !~ '^[0-9 ]*$';
CREATE UNIQUE INDEX {{ns}}reauthentication_token_idx ON {{ns}}users (reauthentication_token)
  WHERE reauthentication_token !~ '^[0-9 ]*$';

CREATE TABLE {{ns}}identities (
  provider_id text NOT NULL,
  user_id uuid NOT NULL REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  identity_data jsonb NOT NULL,
  provider text NOT NULL,
  last_sign_in_at timestamptz NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  email text GENERATED ALWAYS AS (lower(identity_data ->> 'email')) STORED,
  id uuid NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
  CONSTRAINT {{ns}}identities_provider_id_provider_unique UNIQUE (provider_id, provider)
);
CREATE INDEX {{ns}}identities_user_id_idx ON {{ns}}identities (user_id);
CREATE INDEX {{ns}}identities_email_idx ON {{ns}}identities (email text_pattern_ops);

CREATE TYPE {{ns}}aal_level AS ENUM ('aal1', 'aal2', 'aal3');

CREATE TABLE {{ns}}sessions (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  factor_id uuid NULL,
  aal {{ns}}aal_level NULL,
  not_after timestamptz NULL,
  refreshed_at timestamp without time zone NULL,
  user_agent text NULL,
  ip inet NULL,
  tag text NULL,
  oauth_client_id uuid NULL,
  scopes text NULL,
  refresh_token_hmac_key text NULL,
  refresh_token_counter bigint NULL
);
CREATE INDEX {{ns}}sessions_user_id_idx ON {{ns}}sessions (user_id);
CREATE INDEX {{ns}}user_id_created_at_idx ON {{ns}}sessions (user_id, created_at);
CREATE INDEX {{ns}}sessions_not_after_idx ON {{ns}}sessions (not_after DESC);

CREATE TABLE {{ns}}refresh_tokens (
  instance_id uuid NULL,
  id bigserial NOT NULL PRIMARY KEY,
  token varchar(255) NULL UNIQUE,
  user_id varchar(255) NULL,
  revoked boolean NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  parent varchar(255) NULL,
  session_id uuid NULL REFERENCES {{ns}}sessions (id) ON DELETE CASCADE
);
CREATE INDEX {{ns}}refresh_tokens_instance_id_idx ON {{ns}}refresh_tokens (instance_id);
CREATE INDEX {{ns}}refresh_tokens_instance_id_user_id_idx ON {{ns}}refresh_tokens (instance_id, user_id);
CREATE INDEX {{ns}}refresh_tokens_parent_idx ON {{ns}}refresh_tokens (parent);
CREATE INDEX {{ns}}refresh_tokens_session_id_revoked_idx ON {{ns}}refresh_tokens (session_id, revoked);
CREATE INDEX {{ns}}refresh_tokens_updated_at_idx ON {{ns}}refresh_tokens (updated_at DESC);

CREATE TABLE {{ns}}mfa_amr_claims (
  session_id uuid NOT NULL REFERENCES {{ns}}sessions (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  authentication_method text NOT NULL,
  id uuid NOT NULL PRIMARY KEY,
  CONSTRAINT {{ns}}mfa_amr_claims_session_id_authentication_method_pkey
    UNIQUE (session_id, authentication_method)
);

CREATE TYPE {{ns}}factor_type AS ENUM ('totp', 'webauthn', 'phone');
CREATE TYPE {{ns}}factor_status AS ENUM ('unverified', 'verified');

CREATE TABLE {{ns}}mfa_factors (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  friendly_name text NULL,
  factor_type {{ns}}factor_type NOT NULL,
  status {{ns}}factor_status NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  secret text NULL,
  phone text NULL,
  last_challenged_at timestamptz NULL UNIQUE,
  web_authn_credential jsonb NULL,
  web_authn_aaguid uuid NULL
);
CREATE INDEX {{ns}}factor_id_created_at_idx ON {{ns}}mfa_factors (user_id, created_at);

CREATE TABLE {{ns}}mfa_challenges (
  id uuid NOT NULL PRIMARY KEY,
  factor_id uuid NOT NULL REFERENCES {{ns}}mfa_factors (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  verified_at timestamptz NULL,
  ip_address inet NOT NULL,
  otp_code text NULL,
  web_authn_session_data jsonb NULL
);

CREATE TABLE {{ns}}audit_log_entries (
  instance_id uuid NULL,
  id uuid NOT NULL PRIMARY KEY,
  payload json NULL,
  created_at timestamptz NULL,
  ip_address varchar(64) NOT NULL DEFAULT ''
);
CREATE INDEX {{ns}}audit_logs_instance_id_idx ON {{ns}}audit_log_entries (instance_id);

CREATE TYPE {{ns}}code_challenge_method AS ENUM ('s256', 'plain');

CREATE TABLE {{ns}}flow_state (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NULL,
  auth_code text NOT NULL,
  code_challenge_method {{ns}}code_challenge_method NOT NULL,
  code_challenge text NOT NULL,
  provider_type text NOT NULL,
  provider_access_token text NULL,
  provider_refresh_token text NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  authentication_method text NOT NULL,
  auth_code_issued_at timestamptz NULL
);
CREATE INDEX {{ns}}idx_auth_code ON {{ns}}flow_state (auth_code);
CREATE INDEX {{ns}}idx_user_id_auth_method ON {{ns}}flow_state (user_id, authentication_method);
CREATE INDEX {{ns}}flow_state_created_at_idx ON {{ns}}flow_state (created_at DESC);

CREATE TYPE {{ns}}one_time_token_type AS ENUM (
  'confirmation_token',
  'reauthentication_token',
  'recovery_token',
  'email_change_token_new',
  'email_change_token_current',
  'phone_change_token'
);

CREATE TABLE {{ns}}one_time_tokens (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  token_type {{ns}}one_time_token_type NOT NULL,
  token_hash text NOT NULL CHECK (char_length(token_hash) > 0),
  relates_to text NOT NULL,
  created_at timestamp without time zone NOT NULL DEFAULT now(),
  updated_at timestamp without time zone NOT NULL DEFAULT now()
);
CREATE INDEX {{ns}}one_time_tokens_token_hash_hash_idx ON {{ns}}one_time_tokens USING hash (token_hash);
CREATE INDEX {{ns}}one_time_tokens_relates_to_hash_idx ON {{ns}}one_time_tokens USING hash (relates_to);
CREATE UNIQUE INDEX {{ns}}one_time_tokens_user_id_token_type_key
  ON {{ns}}one_time_tokens (user_id, token_type);
