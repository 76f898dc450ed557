// pg_client.hpp -- PgClient: a PostgreSQL Locker from pglease::connect and
// the PostgreSQL functions of pglease/postgres.hpp on it, as members: the
// tests' shorthand for the public API (it uses nothing else).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <pglease/postgres.hpp>

namespace test_support {

class PgClient {
public:
	explicit PgClient(const std::string &dsn, pglease::ClientOptions options = {})
	{
		auto connected = pglease::connect(dsn, options);
		if (!connected) {
			std::fprintf(stderr, "pglease::connect(%s): %s\n", dsn.c_str(), connected.error().message.c_str());
			std::abort();
		}
		locker_ = std::move(*connected);
	}

	pglease::Locker &locker() noexcept { return *locker_; }
	operator pglease::Locker &() noexcept { return *locker_; } // NOLINT: implicit on purpose
	pglease::Locker *operator->() noexcept { return locker_.get(); }

	auto acquire(std::string_view resource, const pglease::LeaseOptions &o = {}) { return locker_->acquire(resource, o); }
	auto try_acquire(std::string_view resource, pglease::LeaseOptions o = {}) { return locker_->try_acquire(resource, o); }
	auto capabilities() const { return locker_->capabilities(); }
	auto provider() const { return locker_->provider(); }
	auto renew(std::string_view r, std::int64_t t, std::string_view h, std::chrono::milliseconds ttl)
	{
		return locker_->renew(r, t, h, ttl);
	}
	auto release(std::string_view r, std::int64_t t, std::string_view h) { return locker_->release(r, t, h); }
	auto renew(std::string_view r, std::int64_t t, std::chrono::milliseconds ttl) { return locker_->renew(r, t, ttl); }
	auto release(std::string_view r, std::int64_t t) { return locker_->release(r, t); }
	auto campaign(std::string_view e, std::string_view v, const pglease::LeaseOptions &o = {})
	{
		return locker_->campaign(e, v, o);
	}
	auto leader(std::string_view e) { return locker_->leader(e); }
	auto observe(std::string_view e, const pglease::LeaderView &seen, std::chrono::milliseconds wait)
	{
		return locker_->observe(e, seen, wait);
	}
	auto status() { return pglease::status(*locker_); }
	template <class F> auto fenced(const pglease::Lease &lease, F &&fn)
	{
		return pglease::fenced(*locker_, lease, std::forward<F>(fn));
	}
	template <class F> auto with_advisory(std::string_view resource, std::chrono::milliseconds wait, F &&fn)
	{
		return pglease::with_advisory(*locker_, resource, wait, std::forward<F>(fn));
	}
	static auto advisory_lock(pqxx::work &tx, std::string_view resource, std::chrono::milliseconds wait)
	{
		return pglease::advisory_lock(tx, resource, wait);
	}

private:
	std::unique_ptr<pglease::Locker> locker_;
};

} // namespace test_support
