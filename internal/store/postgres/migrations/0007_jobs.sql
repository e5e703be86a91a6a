-- Background jobs: when a silent cluster was last marked disconnected, so
-- that the job that marks them acts once per silence.
ALTER TABLE clusters ADD COLUMN disconnected_at TIMESTAMPTZ;

-- When a deployment was released to its cluster: a delivered deployment
-- that a newer one superseded still names what ran before the newer one,
-- should that be cancelled or rolled back.
ALTER TABLE deployments ADD COLUMN delivered_at TIMESTAMPTZ;
UPDATE deployments SET delivered_at = updated_at
    WHERE stage IN ('DELIVERING', 'STARTING', 'PROBING', 'SWITCHING_TRAFFIC', 'RETIRING', 'SUCCEEDED');
