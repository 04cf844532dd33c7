-- Gatehouse's durable mail queue (no upstream table; upstream sends inside the request). Work a
-- request hands off is a row here, written in the request's transaction: a password recovery or
-- magic-link request to run for an address (`job` 'recover', 'magic_link'), or a rendered-ready
-- mail to send (`job` 'mail', written in the transaction that records its token). A worker in each
-- instance claims due rows (`run_at`, with FOR UPDATE SKIP LOCKED), runs them and deletes them; a
-- failure moves `run_at` back off, and a row past `expires_at` (its link would have expired) is
-- dropped. `payload` holds the mail's one-time code until it is sent.
CREATE TABLE {{ns}}mail_queue (
  id uuid NOT NULL PRIMARY KEY,
  job text NOT NULL,
  payload jsonb NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  last_error text NULL,
  created_at timestamptz NOT NULL,
  run_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX {{ns}}mail_queue_run_at_idx ON {{ns}}mail_queue (run_at);

-- The periodic clean-up deletes expired MFA challenges by age.
CREATE INDEX {{ns}}mfa_challenges_created_at_idx ON {{ns}}mfa_challenges (created_at);
