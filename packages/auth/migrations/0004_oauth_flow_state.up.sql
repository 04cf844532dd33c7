-- Every external sign-in (implicit flows too) keeps its own flow_state row from /authorize to
-- /callback: the hash of the browser-binding cookie set at /authorize, the PKCE verifier sent to
-- the provider, and for identity linking the user and the session that asked for it. As upstream
-- (20260115000000_add_flow_state_oauth_context), the PKCE columns become nullable so that an
-- implicit flow's row has none; upstream's other columns are not needed here. These columns are
-- nullable and ignored by upstream, so data still moves both ways.
ALTER TABLE {{ns}}flow_state
  ADD COLUMN IF NOT EXISTS browser_binding_hash text NULL,
  ADD COLUMN IF NOT EXISTS provider_code_verifier text NULL,
  ADD COLUMN IF NOT EXISTS linking_target_id uuid NULL,
  ADD COLUMN IF NOT EXISTS linking_session_id uuid NULL;
ALTER TABLE {{ns}}flow_state
  ALTER COLUMN auth_code DROP NOT NULL,
  ALTER COLUMN code_challenge DROP NOT NULL,
  ALTER COLUMN code_challenge_method DROP NOT NULL;
