// pglease/postgres.hpp -- the PostgreSQL provider's API typed with libpqxx:
// Client::fenced, Client::with_advisory and Client::advisory_lock take a
// pqxx::work.  Kept apart from pglease/pglease.hpp so that a program that
// does not use them compiles without libpqxx's headers; include this header
// (it includes pglease/client.hpp and <pqxx/transaction>) to call them.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include <pqxx/transaction>

#include "pglease/client.hpp"

namespace pglease {

namespace detail {

/// What Client's compiled members see of the caller's pqxx::work.  Converts
/// implicitly from one, so Client::advisory_lock(tx, ...) takes a pqxx::work.
class PgTransaction {
public:
	PgTransaction(pqxx::work &work) noexcept : work_(work) {} // NOLINT: implicit on purpose
	[[nodiscard]] pqxx::work &work() const noexcept { return work_; }

private:
	pqxx::work &work_;
};

/// fn(pqxx::work&) run by run(PgWork), its value carried out: Result<void>
/// for a void fn, else Result<R> holding what fn returned.
template <class F, class Run>
auto
call_in_transaction(F &fn, Run &&run) noexcept
{
	using R = std::invoke_result_t<F &, pqxx::work &>;
	if constexpr (std::is_void_v<R>) {
		return run(PgWork{[&fn](PgTransaction &tx) { fn(tx.work()); }});
	} else {
		std::optional<R> out;
		Result<void> r = run(PgWork{[&](PgTransaction &tx) { out.emplace(fn(tx.work())); }});
		if (!r)
			return Result<R>{r.error()};
		return Result<R>{std::move(*out)};
	}
}

} // namespace detail

template <class F>
auto
Client::fenced(const Lease &lease, F &&fn) noexcept
{
	return detail::call_in_transaction(fn,
	                                   [&](const detail::PgWork &work) { return run_fenced(lease, work); });
}

template <class F>
auto
Client::with_advisory(std::string_view resource, std::chrono::milliseconds wait, F &&fn) noexcept
{
	return detail::call_in_transaction(
	    fn, [&](const detail::PgWork &work) { return run_advisory(resource, wait, work); });
}

} // namespace pglease
