-- 0010: a cluster's apply errors have one shape. Empty: the newest revision
-- applied (or none was acknowledged yet); otherwise the last failed
-- revision, {"revision": N, "errors": [{"object", "message"}]}. A
-- successful ack used to store '[]'. (SQLite cannot change a column's
-- default in place; every insert names the column, so the old default of
-- 0004 is never used.)
UPDATE clusters SET apply_errors = '' WHERE apply_errors = '[]';
