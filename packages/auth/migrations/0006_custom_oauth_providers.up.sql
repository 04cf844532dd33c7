-- Custom OAuth 2.0 and OIDC providers managed at run time through /admin/custom-providers (upstream
-- 20260219120000_add_custom_oauth_providers and 20260625000000_add_custom_claims_allowlist). The
-- columns and constraints are upstream's, with two differences: the URL columns have no https
-- check (SECURITY_ALLOW_PRIVATE_URLS allows http to a loopback host; the application checks every
-- URL), and allowed_email_domains (Gatehouse's: the email domains a provider may sign in) is added.
-- client_secret holds the AES-256-GCM ciphertext, never the secret.
CREATE TABLE IF NOT EXISTS {{ns}}custom_oauth_providers (
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  provider_type text NOT NULL CHECK (provider_type IN ('oauth2', 'oidc')),
  identifier text NOT NULL,
  name text NOT NULL,
  client_id text NOT NULL,
  client_secret text NOT NULL,
  acceptable_client_ids text[] NOT NULL DEFAULT '{}',
  scopes text[] NOT NULL DEFAULT '{}',
  pkce_enabled boolean NOT NULL DEFAULT true,
  attribute_mapping jsonb NOT NULL DEFAULT '{}',
  authorization_params jsonb NOT NULL DEFAULT '{}',
  enabled boolean NOT NULL DEFAULT true,
  email_optional boolean NOT NULL DEFAULT false,
  issuer text NULL,
  discovery_url text NULL,
  skip_nonce_check boolean NOT NULL DEFAULT false,
  cached_discovery jsonb NULL,
  discovery_cached_at timestamptz NULL,
  authorization_url text NULL,
  token_url text NULL,
  userinfo_url text NULL,
  jwks_uri text NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  custom_claims_allowlist text[] NOT NULL DEFAULT '{}',
  allowed_email_domains text[] NOT NULL DEFAULT '{}',
  CONSTRAINT {{ns}}custom_oauth_providers_pkey PRIMARY KEY (id),
  CONSTRAINT {{ns}}custom_oauth_providers_identifier_key UNIQUE (identifier),
  CONSTRAINT {{ns}}custom_oauth_providers_oidc_requires_issuer CHECK (
    provider_type != 'oidc' OR issuer IS NOT NULL
  ),
  CONSTRAINT {{ns}}custom_oauth_providers_oauth2_requires_endpoints CHECK (
    provider_type != 'oauth2' OR (
      authorization_url IS NOT NULL AND token_url IS NOT NULL AND userinfo_url IS NOT NULL
    )
  ),
  CONSTRAINT {{ns}}custom_oauth_providers_identifier_format CHECK (
    identifier ~ '^[a-z0-9][a-z0-9:-]{0,48}[a-z0-9]$'
  ),
  CONSTRAINT {{ns}}custom_oauth_providers_name_length CHECK (
    char_length(name) >= 1 AND char_length(name) <= 100
  ),
  CONSTRAINT {{ns}}custom_oauth_providers_url_length CHECK (
    char_length(coalesce(issuer, '')) <= 2048 AND char_length(coalesce(discovery_url, '')) <= 2048
    AND char_length(coalesce(authorization_url, '')) <= 2048
    AND char_length(coalesce(token_url, '')) <= 2048
    AND char_length(coalesce(userinfo_url, '')) <= 2048
    AND char_length(coalesce(jwks_uri, '')) <= 2048
  ),
  CONSTRAINT {{ns}}custom_oauth_providers_client_id_length CHECK (
    char_length(client_id) >= 1 AND char_length(client_id) <= 512
  )
);
CREATE INDEX IF NOT EXISTS {{ns}}custom_oauth_providers_provider_type_idx
  ON {{ns}}custom_oauth_providers (provider_type);
CREATE INDEX IF NOT EXISTS {{ns}}custom_oauth_providers_created_at_idx
  ON {{ns}}custom_oauth_providers (created_at);
