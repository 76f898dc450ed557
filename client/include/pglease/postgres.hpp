// pglease/postgres.hpp -- what PostgreSQL gives beyond the Locker contract,
// as functions over a Locker of pglease::connect("postgresql://...") and
// its Leases: fenced writes and advisory locks in a pqxx::work.  Kept apart
// from pglease/pglease.hpp so that a program that does not use them
// compiles without libpqxx's headers; include this header (it includes
// <pqxx/transaction>) to call them.  A Locker of another provider answers
// Errc::invalid_argument, before any I/O.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include <pqxx/transaction>

#include "pglease/pglease.hpp"

namespace pglease {

/// Run fn(pqxx::work&) in a transaction that first passes lease.fence: the
/// writes commit only while the lease is current, and no one else can be
/// granted it until they do.  The server decides, whatever the local
/// deadline says.  Errc::lost (LS001) if the token is stale; an exception
/// thrown by fn rolls back and becomes Errc::internal.  Returns Result<void>
/// for a void fn, else Result<R> holding what fn returned.
template <class F> auto fenced(Locker &locker, const Lease &lease, F &&fn) noexcept;

/// Strategy::advisory: run fn(pqxx::work&) in a transaction holding
/// pg_advisory_xact_lock on the resource (a namespaced key), waiting at
/// most `wait` (Errc::timeout).
template <class F>
auto with_advisory(Locker &locker, std::string_view resource, std::chrono::milliseconds wait, F &&fn) noexcept;

/// Take that advisory lock in the caller's own transaction.
Result<void> advisory_lock(pqxx::work &tx, std::string_view resource, std::chrono::milliseconds wait) noexcept;

namespace detail {

/// The compiled halves of fenced and with_advisory.
using PgWork = std::function<void(pqxx::work &)>;
Result<void> fenced_work(Locker &locker, const Lease &lease, const PgWork &work) noexcept;
Result<void> advisory_work(Locker &locker, std::string_view resource, std::chrono::milliseconds wait,
                           const PgWork &work) noexcept;

/// fn(pqxx::work&) run by run(PgWork), its value carried out.
template <class F, class Run>
auto
call_in_transaction(F &fn, Run &&run) noexcept
{
	using R = std::invoke_result_t<F &, pqxx::work &>;
	if constexpr (std::is_void_v<R>) {
		return run(PgWork{[&fn](pqxx::work &tx) { fn(tx); }});
	} else {
		std::optional<R> out;
		Result<void> r = run(PgWork{[&](pqxx::work &tx) { out.emplace(fn(tx)); }});
		if (!r)
			return Result<R>{r.error()};
		return Result<R>{std::move(*out)};
	}
}

} // namespace detail

template <class F>
auto
fenced(Locker &locker, const Lease &lease, F &&fn) noexcept
{
	return detail::call_in_transaction(
	    fn, [&](const detail::PgWork &work) { return detail::fenced_work(locker, lease, work); });
}

template <class F>
auto
with_advisory(Locker &locker, std::string_view resource, std::chrono::milliseconds wait, F &&fn) noexcept
{
	return detail::call_in_transaction(
	    fn, [&](const detail::PgWork &work) { return detail::advisory_work(locker, resource, wait, work); });
}

} // namespace pglease
