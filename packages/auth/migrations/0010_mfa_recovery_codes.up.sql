-- MFA recovery codes (upstream's recovery-code factor, 2026-08): one set per user, each code
-- single use. A code is stored as the SHA-256 of its normalised text only (the codes have 80 bits
-- of entropy; see SECURITY.md), consumed by setting `used_at` once. Regenerating replaces the
-- codes of the set; deleting the set (the user, or an admin's reset) removes them.
CREATE TABLE {{ns}}mfa_recovery_code_sets (
  id uuid NOT NULL PRIMARY KEY,
  user_id uuid NOT NULL UNIQUE REFERENCES {{ns}}users (id) ON DELETE CASCADE,
  friendly_name text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE {{ns}}mfa_recovery_codes (
  id uuid NOT NULL PRIMARY KEY,
  set_id uuid NOT NULL REFERENCES {{ns}}mfa_recovery_code_sets (id) ON DELETE CASCADE,
  code_hash bytea NOT NULL,
  created_at timestamptz NOT NULL,
  used_at timestamptz NULL
);
CREATE INDEX {{ns}}mfa_recovery_codes_set_id_idx ON {{ns}}mfa_recovery_codes (set_id);
