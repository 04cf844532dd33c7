-- The clean-up deletes authorization requests of every status a day after they expired
-- (services/cleanup.ts); the index of migration 0009 covers pending ones only.
CREATE INDEX {{ns}}oauth_auth_expires_idx ON {{ns}}oauth_authorizations (expires_at);
