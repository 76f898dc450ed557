// etcd/gateway.hpp -- the etcd v3 API as the etcd provider uses it: JSON over
// HTTP to the gRPC gateway every etcd 3.4 member serves under /v3/ on its
// client port, with per-request failover over the endpoints of an etcd:// URL.
//
// Why the gateway and not gRPC: the provider needs six calls (lease grant,
// keepalive, revoke, txn, range, deleterange, watch); libcurl and
// nlohmann-json are two small Debian packages, where gRPC C++ would bring
// protobuf code generation and the grpc++ stack into the build of every user
// of pglease::etcd.  The price: keys, values and int64s travel as base64 and
// decimal strings, and a watch is a chunked HTTP stream read by a callback.
//
// etcds:// (etcd/url.hpp) speaks HTTPS, the server's certificate always
// verified and its host name checked.  With a user and password, a token from
// /v3/auth/authenticate goes with every request (the Authorization header
// the gateway hands to etcd); a request etcd answers with "invalid auth
// token" (expired, or auth disabled and enabled again), "revision of auth
// store is old" or "user name is empty" is authenticated again once and sent
// again, within the deadline of the call.
//
// No recipe lives here (see etcd/locker.cpp); base64 and int64s: etcd/codec.cpp.
//
// Locking: Gateway::mu_ guards the idle curl handles, the preferred endpoint,
// the backoff state and the token; no lock is held across a request except
// auth_mu_, which lets one thread at a time authenticate (the others then
// take its token).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "detail/backoff.hpp"
#include "detail/endpoints.hpp"
#include "etcd/url.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease::detail::etcd {

using Json = nlohmann::json;

using Endpoint = detail::HostPort;

std::string base64_encode(std::string_view bytes);
/// The bytes of base64 text (invalid characters are skipped).
std::string base64_decode(std::string_view text);
/// An int64 field of a gateway reply: int64s come as decimal strings, and a
/// field equal to 0 is left out altogether.
std::int64_t int64_of(const Json &object, const char *field) noexcept;

/// A reply of the gateway: grpc_code 0 and the body, or the gRPC status code
/// and message etcd answered (5 = not found, e.g. "requested lease not found").
struct Reply {
	int grpc_code = 0;
	std::string message;
	Json body;
};

class CurlHandle;

/// How a watch ended: an event came, the timeout passed, or etcd canceled it
/// because its start revision was compacted (the caller reads again and
/// watches from the read's revision: etcd #7815's silent observer).
enum class WatchEnd { event, timeout, compacted };

class Gateway {
public:
	Gateway(Target target, const ClientOptions &options);
	~Gateway();
	Gateway(const Gateway &) = delete;
	Gateway &operator=(const Gateway &) = delete;

	/// POST body to path (e.g. "/v3/kv/range") on the preferred endpoint,
	/// failing over to the next one on connection trouble or gRPC
	/// UNAVAILABLE (no leader, a member shutting down).  A TLS refusal
	/// (the server's certificate, or ours) is Errc::permission, a file
	/// curl cannot use or a TLS/plain mismatch invalid_argument, when no
	/// other endpoint answered.  A refused password is Errc::permission.
	/// Errc::unavailable
	/// when no endpoint answered by deadline (at once while every endpoint is
	/// in reconnect backoff).  One deadline for the whole call: each endpoint
	/// tried gets an equal share of the time left (the last one all of it),
	/// so N frozen members cost one deadline, not N timeouts.
	[[nodiscard]] Result<Reply> post(std::string_view path, const Json &body,
	                                 std::chrono::steady_clock::time_point deadline) noexcept;
	/// The deadline of a call starting now: now + ClientOptions::statement_grace.
	[[nodiscard]] std::chrono::steady_clock::time_point call_deadline() const noexcept;
	[[nodiscard]] const ClientOptions &options() const noexcept { return options_; }

	/// Watch key from start_revision until it is deleted (true) or timeout
	/// passes (false).  One endpoint, no failover: on any error the caller
	/// re-checks with range requests.
	[[nodiscard]] Result<bool> wait_deleted(std::string_view key, std::int64_t start_revision,
	                                        std::chrono::milliseconds timeout) noexcept;
	/// Watch [key, range_end) (range_end empty: key alone) from
	/// start_revision until a DELETE event (deletes_only) or any event, the
	/// timeout, or a compaction.  One endpoint, no failover: on an error
	/// the caller re-reads.
	[[nodiscard]] Result<WatchEnd> watch(std::string_view key, std::string_view range_end,
	                                     std::int64_t start_revision, std::chrono::milliseconds timeout,
	                                     bool deletes_only) noexcept;

private:
	Result<Reply> exchange(std::string_view path, const std::string &payload, const std::string &token,
	                       std::chrono::steady_clock::time_point deadline);
	Result<void> authenticate(std::uint64_t stale, std::chrono::steady_clock::time_point deadline);
	std::pair<std::string, std::uint64_t> token() noexcept;
	std::unique_ptr<CurlHandle> borrow() noexcept;
	void give_back(std::unique_ptr<CurlHandle> handle) noexcept;
	std::vector<std::size_t> attempt_order() noexcept;
	void reachable(std::size_t index) noexcept;
	void unreachable(std::size_t index) noexcept;
	std::string url_of(std::size_t index, std::string_view path) const;

	struct EndpointState {
		Endpoint endpoint;
		Backoff backoff;
		std::chrono::steady_clock::time_point next_attempt{};
		std::string last_error;
	};

	ClientOptions options_;
	Target target_; // its endpoints moved to endpoints_
	std::mutex auth_mu_;
	std::mutex mu_;
	std::string token_;           // empty: none (yet, or etcd's auth is off)
	std::uint64_t token_gen_ = 0; // authentications so far
	std::vector<EndpointState> endpoints_;
	std::size_t preferred_ = 0;
	std::vector<std::unique_ptr<CurlHandle>> idle_;
};

} // namespace pglease::detail::etcd
