-- 0026: an API token may run trusted documents only (issue 33): the
-- operations of NEBULA_TRUSTED_DOCUMENTS and of the console's build. An
-- integration opts in when its token is made.
ALTER TABLE api_tokens ADD COLUMN trusted_documents_only INTEGER NOT NULL DEFAULT 0;
