// postgres/postgres.cpp -- the PostgreSQL provider's pqxx-typed extras,
// declared in pglease/client.hpp and reached through pglease/postgres.hpp:
// fenced writes and advisory locks in a pqxx::work.
#include "pglease/postgres.hpp"

#include "detail/provider.hpp"
#include "postgres/db.hpp"
#include "postgres/pool.hpp"

namespace pglease {

namespace {

// in_section -- the caller's section as connection.cpp runs it: on the
// transaction it opened
std::function<void(pqxx::work &)>
in_section(const detail::PgWork &work)
{
	return [&work](pqxx::work &tx) {
		detail::PgTransaction section{tx};
		work(section);
	};
}

} // namespace

Result<void>
Client::run_fenced(const Lease &lease, const detail::PgWork &work) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok;
	detail::LeaseState *state = state_of(lease);
	if (!state)
		return Error{Errc::lost, "", "empty lease"};
	// no local pre-check: the fence in the server is the authority
	Result<void> r = pool_->with_db<void>([&](detail::Db &db) {
		return detail::db_fenced(db, lease.resource(), lease.token(), pool_->options().statement_grace,
		                         in_section(work));
	});
	if (!r && r.error().code == Errc::lost)
		detail::LeaseEngine::mark_lost(*state, r.error());
	return r;
}

Result<void>
Client::run_advisory(std::string_view resource, std::chrono::milliseconds wait,
                     const detail::PgWork &work) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok;
	if (auto ok = detail::check_resource(resource); !ok)
		return ok;
	if (wait < std::chrono::milliseconds{0})
		return Error{Errc::invalid_argument, "22023", "wait must not be negative"};
	return pool_->with_db<void>([&](detail::Db &db) {
		return detail::db_with_advisory(db, resource, wait,
		                                detail::saturating_add(wait, pool_->options().statement_grace),
		                                in_section(work));
	});
}

Result<void>
Client::advisory_lock(detail::PgTransaction tx, std::string_view resource,
                      std::chrono::milliseconds wait) noexcept
{
	return detail::db_advisory_lock(tx.work(), resource, wait);
}

} // namespace pglease
