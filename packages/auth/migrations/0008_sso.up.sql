-- SAML 2.0 single sign-on, as upstream's tables after its SSO migrations (20221021082433_add_saml,
-- 20221215195900_remove_sso_sessions, 20240115144230, 20240314092811, 20250717082212) and the
-- flow_state link of its relay states, so that data moves both ways.
CREATE TABLE IF NOT EXISTS {{ns}}sso_providers (
  id uuid NOT NULL PRIMARY KEY,
  resource_id text NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  disabled boolean NULL,
  CONSTRAINT "resource_id not empty" CHECK (resource_id = null OR char_length(resource_id) > 0)
);
CREATE UNIQUE INDEX IF NOT EXISTS {{ns}}sso_providers_resource_id_idx ON {{ns}}sso_providers (lower(resource_id));
CREATE INDEX IF NOT EXISTS {{ns}}sso_providers_resource_id_pattern_idx ON {{ns}}sso_providers (resource_id text_pattern_ops);

CREATE TABLE IF NOT EXISTS {{ns}}sso_domains (
  id uuid NOT NULL PRIMARY KEY,
  sso_provider_id uuid NOT NULL REFERENCES {{ns}}sso_providers (id) ON DELETE CASCADE,
  domain text NOT NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  CONSTRAINT "domain not empty" CHECK (char_length(domain) > 0)
);
CREATE INDEX IF NOT EXISTS {{ns}}sso_domains_sso_provider_id_idx ON {{ns}}sso_domains (sso_provider_id);
CREATE UNIQUE INDEX IF NOT EXISTS {{ns}}sso_domains_domain_idx ON {{ns}}sso_domains (lower(domain));

CREATE TABLE IF NOT EXISTS {{ns}}saml_providers (
  id uuid NOT NULL PRIMARY KEY,
  sso_provider_id uuid NOT NULL REFERENCES {{ns}}sso_providers (id) ON DELETE CASCADE,
  entity_id text NOT NULL UNIQUE,
  metadata_xml text NOT NULL,
  metadata_url text NULL,
  attribute_mapping jsonb NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  name_id_format text NULL,
  CONSTRAINT "metadata_xml not empty" CHECK (char_length(metadata_xml) > 0),
  CONSTRAINT "metadata_url not empty" CHECK (metadata_url = null OR char_length(metadata_url) > 0),
  CONSTRAINT "entity_id not empty" CHECK (char_length(entity_id) > 0)
);
CREATE INDEX IF NOT EXISTS {{ns}}saml_providers_sso_provider_id_idx ON {{ns}}saml_providers (sso_provider_id);

CREATE TABLE IF NOT EXISTS {{ns}}saml_relay_states (
  id uuid NOT NULL PRIMARY KEY,
  sso_provider_id uuid NOT NULL REFERENCES {{ns}}sso_providers (id) ON DELETE CASCADE,
  request_id text NOT NULL,
  for_email text NULL,
  redirect_to text NULL,
  created_at timestamptz NULL,
  updated_at timestamptz NULL,
  flow_state_id uuid NULL REFERENCES {{ns}}flow_state (id) ON DELETE CASCADE,
  CONSTRAINT "request_id not empty" CHECK (char_length(request_id) > 0)
);
CREATE INDEX IF NOT EXISTS {{ns}}saml_relay_states_sso_provider_id_idx ON {{ns}}saml_relay_states (sso_provider_id);
CREATE INDEX IF NOT EXISTS {{ns}}saml_relay_states_for_email_idx ON {{ns}}saml_relay_states (for_email);
CREATE INDEX IF NOT EXISTS {{ns}}saml_relay_states_created_at_idx ON {{ns}}saml_relay_states (created_at DESC);
