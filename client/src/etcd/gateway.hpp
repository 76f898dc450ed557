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
// No recipe lives here (see etcd/locker.cpp).
//
// Locking: Gateway::mu_ guards the idle curl handles, the preferred endpoint
// and the backoff state; no lock is held across a request.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "detail/backoff.hpp"
#include "detail/endpoints.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"

namespace pglease::detail::etcd {

using Json = nlohmann::json;

using Endpoint = detail::HostPort;

/// The endpoints of etcd://h1:p1[,h2:p2,...], or Errc::invalid_argument
/// naming what is wrong, before any I/O: the host:port list every provider
/// reads (detail/endpoints.hpp: [v6]:port accepted, a port 1-65535).  User and password (etcd://user:pw@...)
/// are refused without quoting them: etcd authentication is not supported yet.
Result<std::vector<Endpoint>> parse_url(std::string_view url) noexcept;

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

class Gateway {
public:
	Gateway(std::vector<Endpoint> endpoints, const ClientOptions &options);
	~Gateway();
	Gateway(const Gateway &) = delete;
	Gateway &operator=(const Gateway &) = delete;

	/// POST body to path (e.g. "/v3/kv/range") on the preferred endpoint,
	/// failing over to the next one on connection trouble or gRPC
	/// UNAVAILABLE (no leader, a member shutting down).  Errc::unavailable
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

private:
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
	std::mutex mu_;
	std::vector<EndpointState> endpoints_;
	std::size_t preferred_ = 0;
	std::vector<std::unique_ptr<CurlHandle>> idle_;
};

} // namespace pglease::detail::etcd
