-- 0010: a cluster's apply errors have one shape. Empty: the newest revision
-- applied (or none was acknowledged yet); otherwise the last failed
-- revision, {"revision": N, "errors": [{"object", "message"}]}. A
-- successful ack used to store '[]'.
UPDATE clusters SET apply_errors = '' WHERE apply_errors = '[]';
ALTER TABLE clusters ALTER COLUMN apply_errors SET DEFAULT '';
