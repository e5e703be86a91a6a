-- 0019: the newest live deployment of each service in each environment
-- (what a compile deploys) is read by walking one index range backwards
-- per pair, as far as the first live one, instead of ranking the tenant's
-- whole history of delivered and superseded deployments.
CREATE INDEX deployments_pair_idx ON deployments (service_id, environment_id, id);
