-- schema.sql -- what the fault tests record on the server.
--
-- fault_history: every committed change of lease.grants, written by a
-- trigger in the same transaction (so it is exactly as durable as the change
-- itself).  fault_ledger: the workers' fenced writes; seq is drawn inside the
-- fenced transaction, after the fence.
CREATE EXTENSION IF NOT EXISTS pg_lease;
CREATE TABLE fault_history (
	id bigserial PRIMARY KEY,
	op text NOT NULL,
	resource text NOT NULL,
	token bigint NOT NULL,
	holder text NOT NULL,
	granted_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	logged_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE fault_ledger (
	seq bigserial PRIMARY KEY,
	resource text NOT NULL,
	token bigint NOT NULL,
	write_id text NOT NULL UNIQUE
);
-- runs under the extension's pinned search_path: qualify everything
CREATE FUNCTION fault_log_grant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.fault_history (op, resource, token, holder, granted_at, expires_at)
	VALUES (TG_OP, NEW.resource, NEW.token, NEW.holder, NEW.granted_at, NEW.expires_at);
	RETURN NULL;
END $$;
CREATE TRIGGER fault_log AFTER INSERT OR UPDATE ON lease.grants
	FOR EACH ROW EXECUTE FUNCTION fault_log_grant();
