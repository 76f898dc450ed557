// postgres/postgres.cpp -- the PostgreSQL provider's extras: the functions
// of pglease/postgres.hpp and pglease/status.hpp, which find the provider
// behind a Locker (a locker of another provider is refused before any I/O),
// and PgLocker's fenced writes and advisory locks in a pqxx::work.
#include "pglease/postgres.hpp"

#include "detail/provider.hpp"
#include "postgres/db.hpp"
#include "postgres/locker.hpp"
#include "postgres/pool.hpp"

namespace pglease {

namespace {

// postgres_of -- the PostgreSQL provider behind locker, or why not
Result<detail::PgLocker *>
postgres_of(Locker &locker, const char *what) noexcept
{
	if (auto *pg = dynamic_cast<detail::PgLocker *>(&locker))
		return pg;
	try {
		return Error{Errc::invalid_argument, "22023",
		             std::string{what} + " needs a PostgreSQL locker (pglease::connect(\"postgresql://...\")), not " +
		                 std::string{locker.provider()}};
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace

namespace detail {

Result<void>
fenced_work(Locker &locker, const Lease &lease, const PgWork &work) noexcept
{
	auto pg = postgres_of(locker, "a fenced write");
	if (!pg)
		return pg.error();
	return (*pg)->run_fenced(lease, work);
}

Result<void>
advisory_work(Locker &locker, std::string_view resource, std::chrono::milliseconds wait,
              const PgWork &work) noexcept
{
	auto pg = postgres_of(locker, "an advisory lock");
	if (!pg)
		return pg.error();
	return (*pg)->run_advisory(resource, wait, work);
}

Result<void>
PgLocker::run_fenced(const Lease &lease, const PgSection &section) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok;
	LeaseState *state = state_of(lease);
	if (!state)
		return Error{Errc::lost, "", "empty lease"};
	// no local pre-check: the fence in the server is the authority
	Result<void> r = pool_->with_db<void>([&](Db &db) {
		return db_fenced(db, lease.resource(), lease.token(), pool_->options().statement_grace, section);
	});
	if (!r && r.error().code == Errc::lost)
		LeaseEngine::mark_lost(*state, r.error());
	return r;
}

Result<void>
PgLocker::run_advisory(std::string_view resource, std::chrono::milliseconds wait,
                       const PgSection &section) noexcept
{
	if (auto ok = constructed(); !ok)
		return ok;
	if (auto ok = check_resource(resource); !ok)
		return ok;
	if (wait < std::chrono::milliseconds{0})
		return Error{Errc::invalid_argument, "22023", "wait must not be negative"};
	return pool_->with_db<void>([&](Db &db) {
		return db_with_advisory(db, resource, wait, saturating_add(wait, pool_->options().statement_grace),
		                        section);
	});
}

Result<std::vector<LeaseInfo>>
PgLocker::status() noexcept
{
	if (auto ok = constructed(); !ok)
		return ok.error();
	return pool_->with_db<std::vector<LeaseInfo>>(
	    [&](Db &db) { return db_status(db, pool_->options().statement_grace); });
}

} // namespace detail

Result<void>
advisory_lock(pqxx::work &tx, std::string_view resource, std::chrono::milliseconds wait) noexcept
{
	return detail::db_advisory_lock(tx, resource, wait);
}

Result<std::vector<LeaseInfo>>
status(Locker &locker) noexcept
{
	auto pg = postgres_of(locker, "status");
	if (!pg)
		return pg.error();
	return (*pg)->status();
}

} // namespace pglease
