// etcd/api.hpp -- the etcd calls the recipes make (etcd/locker.cpp's lock,
// etcd/election.cpp's election), each one gateway request (etcd/gateway.hpp)
// bounded by the deadline of the call it is part of; the keys they read and
// write are etcd/layout.hpp's.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detail/provider.hpp"
#include "etcd/gateway.hpp"
#include "etcd/layout.hpp"

namespace pglease::detail::etcd {

constexpr int grpc_not_found = 5;
constexpr milliseconds watch_retry{50}; // pause before re-reading when a watch failed

// too_large -- a reply that means the request can never succeed because of its
// size: gRPC's own limit answers RESOURCE_EXHAUSTED ("received message larger
// than max"), etcd's INVALID_ARGUMENT ("etcdserver: request is too large");
// RESOURCE_EXHAUSTED also means "too many requests" (retryable), so the
// message decides
inline bool
too_large(const Reply &reply)
{
	return reply.message.find("larger than max") != std::string::npos ||
	       reply.message.find("too large") != std::string::npos;
}

// error_of -- the Error for a gRPC status the gateway answered
inline Error
error_of(const Reply &reply, std::string_view what)
{
	Errc code = Errc::internal;
	switch (reply.grpc_code) {
	case 3:  // INVALID_ARGUMENT
	case 11: // OUT_OF_RANGE (e.g. a lease TTL above etcd's maximum)
		code = Errc::invalid_argument;
		break;
	case 4:  // DEADLINE_EXCEEDED
	case 8:  // RESOURCE_EXHAUSTED
	case 14: // UNAVAILABLE
		code = too_large(reply) ? Errc::invalid_argument : Errc::unavailable;
		break;
	case 7:  // PERMISSION_DENIED
	case 16: // UNAUTHENTICATED
		code = Errc::permission;
		break;
	case grpc_not_found:
		code = Errc::lost;
		break;
	default:
		break;
	}
	std::string message = "etcd " + std::string(what) + ": " + reply.message;
	if (reply.grpc_code == 7) // the role it lacks: docs/production.md "etcd"
		message += " (the user needs a readwrite role on the key's prefix: lock_prefix= for "
		           "locks, election_prefix= for elections)";
	return Error{code, code == Errc::invalid_argument ? "22023" : "", message};
}

// ttl_seconds_of -- a TTL in etcd's unit, whole seconds, rounded up: a lease
// never ends before the TTL asked for (max_ttl() keeps it in range)
inline std::int64_t
ttl_seconds_of(milliseconds ttl) noexcept
{
	return ttl.count() / 1000 + (ttl.count() % 1000 != 0 ? 1 : 0);
}

// A thin layer of the calls the recipe makes, each one gateway request
// bounded by the deadline of the call it is part of.
class Api {
public:
	explicit Api(std::shared_ptr<Gateway> gateway) : gateway_(std::move(gateway)) {}

	Gateway &gateway() { return *gateway_; }

	// lease_grant -- a new lease of ttl_seconds; its ID
	Result<std::int64_t> lease_grant(std::int64_t ttl_seconds, Clock::time_point deadline)
	{
		auto r = gateway_->post("/v3/lease/grant", Json{{"TTL", std::to_string(ttl_seconds)}}, deadline);
		if (!r)
			return r.error();
		if (r->grpc_code != 0)
			return error_of(*r, "lease grant");
		std::int64_t id = int64_of(r->body, "ID");
		if (id <= 0)
			return Error{Errc::internal, "", "etcd lease grant: no lease ID in " + r->body.dump()};
		return id;
	}

	// lease_call -- one of the calls on an existing lease (keepalive, timetolive,
	// revoke): its answer, or nullopt when etcd no longer knows the lease
	Result<std::optional<Json>> lease_call(const char *path, const char *what, std::int64_t lease,
	                                       Clock::time_point deadline)
	{
		auto r = gateway_->post(path, Json{{"ID", std::to_string(lease)}}, deadline);
		if (!r)
			return r.error();
		if (r->grpc_code == grpc_not_found)
			return std::optional<Json>{};
		if (r->grpc_code != 0)
			return error_of(*r, what);
		return std::optional<Json>{std::move(r->body)};
	}

	// keepalive -- the lease's TTL after the refresh; 0 when it is gone
	Result<std::int64_t> keepalive(std::int64_t lease, Clock::time_point deadline)
	{
		auto body = lease_call("/v3/lease/keepalive", "lease keepalive", lease, deadline);
		if (!body)
			return body.error();
		return *body ? int64_of(**body, "TTL") : std::int64_t{0};
	}

	// granted_ttl -- the TTL the lease was granted with (what every keepalive
	// refreshes it to); 0 when it is gone
	Result<std::int64_t> granted_ttl(std::int64_t lease, Clock::time_point deadline)
	{
		auto body = lease_call("/v3/lease/timetolive", "lease timetolive", lease, deadline);
		if (!body)
			return body.error();
		if (!*body || int64_of(**body, "TTL") <= 0) // TTL -1: expired or revoked
			return std::int64_t{0};
		return int64_of(**body, "grantedTTL");
	}

	// revoke -- end the lease and delete its keys; false: it was gone already
	Result<bool> revoke(std::int64_t lease, Clock::time_point deadline)
	{
		auto body = lease_call("/v3/lease/revoke", "lease revoke", lease, deadline);
		if (!body)
			return body.error();
		return body->has_value();
	}

	struct Range {
		std::vector<Kv> kvs; // lock keys of the resource only
		std::int64_t revision = 0;
	};

	/// A queued key's create revision and the queue it is in, read in the
	/// transaction that put it.
	struct Queued {
		std::int64_t revision = 0;
		Range queue;
	};

	// create_key -- put key (in the queue at prefix) with lease unless it
	// exists, and read the queue in the same txn (every shape, as
	// lock_keys(shared_layout)): one request, one raft proposal, where a
	// put and then a range cost two requests
	Result<Queued> create_key(const std::string &prefix, const std::string &key, const std::string &value,
	                          std::int64_t lease, Clock::time_point deadline, bool shared_layout)
	{
		const std::string k = base64_encode(key);
		Json read = {{"request_range",
		              {{"key", base64_encode(prefix)},
		               {"range_end", base64_encode(prefix_end(prefix))},
		               {"keys_only", true}}}};
		Json txn = {
		    {"compare",
		     Json::array(
		         {{{"key", k}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}}})},
		    {"success",
		     Json::array({{{"request_put",
		                    {{"key", k}, {"value", base64_encode(value)}, {"lease", std::to_string(lease)}}}},
		                  read})},
		    {"failure", Json::array({read})}};
		auto r = gateway_->post("/v3/kv/txn", txn, deadline);
		if (!r)
			return r.error();
		if (r->grpc_code != 0)
			return error_of(*r, "txn (put " + key + ")");
		const Json responses = r->body.value("responses", Json::array());
		if (responses.empty())
			return Error{Errc::internal, "", "etcd txn: no responses in " + r->body.dump()};
		Queued out;
		out.queue =
		    range_of(responses.back().value("response_range", Json::object()), prefix, false, shared_layout);
		out.queue.revision = int64_of(r->body.value("header", Json::object()), "revision");
		const Kv *mine = nullptr;
		for (const auto &kv : out.queue.kvs)
			if (kv.key == key)
				mine = &kv;
		if (!mine || mine->create_revision <= 0)
			return Error{Errc::internal, "", "etcd txn: the lock key is missing right after its put"};
		if (mine->lease != lease) // never ours: a key named by this lease is another's
			return Error{Errc::internal, "", "etcd txn: the lock key " + key + " exists under another lease"};
		out.revision = mine->create_revision;
		return out;
	}

	// lock_keys -- the keys of the queue at prefix created in [min_rev,
	// max_rev] (0: open), with their values (holder labels, proclamations)
	// if with_values; lock keys only, or (shared_layout) every shape
	Result<Range> lock_keys(const std::string &prefix, std::int64_t min_rev, std::int64_t max_rev,
	                        Clock::time_point deadline, bool with_values = false, bool shared_layout = false)
	{
		Json request = {{"key", base64_encode(prefix)},
		                {"range_end", base64_encode(prefix_end(prefix))},
		                {"keys_only", !with_values}};
		if (min_rev > 0)
			request["min_create_revision"] = std::to_string(min_rev);
		if (max_rev > 0)
			request["max_create_revision"] = std::to_string(max_rev);
		auto r = gateway_->post("/v3/kv/range", request, deadline);
		if (!r)
			return r.error();
		if (r->grpc_code != 0)
			return error_of(*r, "range");
		Range out = range_of(r->body, prefix, with_values, shared_layout);
		out.revision = int64_of(r->body.value("header", Json::object()), "revision");
		return out;
	}

	// range_of -- the keys of the queue at prefix in a range reply (lock
	// keys only, or every shape), with their values if with_values
	static Range range_of(const Json &reply, const std::string &prefix, bool with_values, bool shared_layout)
	{
		Range out;
		for (const Json &kv : reply.value("kvs", Json::array())) {
			std::string key = base64_decode(kv.value("key", ""));
			auto shape = shape_of(key, prefix);
			if (shape && (shared_layout || shape->kind == KeyKind::lock))
				out.kvs.push_back(Kv{std::move(key), int64_of(kv, "create_revision"), int64_of(kv, "lease"),
				                     with_values ? base64_decode(kv.value("value", "")) : std::string{},
				                     *shape});
		}
		return out;
	}

	// delete_key -- delete key if it still has create revision `revision`
	// and, if holder is not empty, that value (one txn); true: it was there
	Result<bool> delete_key(const std::string &key, std::int64_t revision, Clock::time_point deadline,
	                        std::string_view holder = {})
	{
		const std::string k = base64_encode(key);
		Json compare = Json::array({{{"key", k},
		                             {"target", "CREATE"},
		                             {"result", "EQUAL"},
		                             {"create_revision", std::to_string(revision)}}});
		if (!holder.empty())
			compare.push_back({{"key", k},
			                   {"target", "VALUE"},
			                   {"result", "EQUAL"},
			                   {"value", base64_encode(std::string{holder})}});
		Json txn = {{"compare", compare},
		            {"success", Json::array({{{"request_delete_range", {{"key", k}}}}})}};
		auto r = gateway_->post("/v3/kv/txn", txn, deadline);
		if (!r)
			return r.error();
		if (r->grpc_code != 0)
			return error_of(*r, "txn (delete " + key + ")");
		return r->body.value("succeeded", false);
	}

	// first_key -- the key of the queue at prefix with the lowest create
	// revision, with its value, as concurrency.Election's Leader reads it
	// (the prefix sorted by create revision, limit 1); kvs empty when the
	// queue is empty.  A key of a nested name sorting first costs a second
	// read of the whole queue.
	Result<Range> first_key(const std::string &prefix, Clock::time_point deadline)
	{
		Json request = {{"key", base64_encode(prefix)},
		                {"range_end", base64_encode(prefix_end(prefix))},
		                {"sort_order", "ASCEND"},
		                {"sort_target", "CREATE"},
		                {"limit", "1"}};
		auto r = gateway_->post("/v3/kv/range", request, deadline);
		if (!r)
			return r.error();
		if (r->grpc_code != 0)
			return error_of(*r, "range (leader)");
		Range out;
		out.revision = int64_of(r->body.value("header", Json::object()), "revision");
		const Json kvs = r->body.value("kvs", Json::array());
		if (kvs.empty())
			return out;
		std::string key = base64_decode(kvs[0].value("key", ""));
		if (!is_lock_key(key, prefix)) { // a nested name's key: read the queue itself
			auto all = lock_keys(prefix, 0, 0, deadline, true);
			if (!all)
				return all.error();
			auto first = std::min_element(all->kvs.begin(), all->kvs.end(), [](const Kv &a, const Kv &b) {
				return a.create_revision < b.create_revision;
			});
			if (first != all->kvs.end())
				all->kvs = {*first};
			return all;
		}
		out.kvs.push_back(Kv{std::move(key), int64_of(kvs[0], "create_revision"), int64_of(kvs[0], "lease"),
		                     base64_decode(kvs[0].value("value", "")), KeyShape{}});
		return out;
	}

	// proclaim -- set key's value if it still has create revision
	// `revision`, keeping it under `lease` (concurrency.Election's Proclaim:
	// one txn); false: the key of that term is gone
	Result<bool> proclaim(const std::string &key, std::int64_t revision, std::int64_t lease,
	                      std::string_view value, Clock::time_point deadline)
	{
		const std::string k = base64_encode(key);
		Json txn = {{"compare", Json::array({{{"key", k},
		                                      {"target", "CREATE"},
		                                      {"result", "EQUAL"},
		                                      {"create_revision", std::to_string(revision)}}})},
		            {"success", Json::array({{{"request_put",
		                                       {{"key", k},
		                                        {"value", base64_encode(std::string{value})},
		                                        {"lease", std::to_string(lease)}}}}})}};
		auto r = gateway_->post("/v3/kv/txn", txn, deadline);
		if (!r)
			return r.error();
		if (r->grpc_code != 0)
			return error_of(*r, "txn (proclaim)");
		return r->body.value("succeeded", false);
	}

private:
	std::shared_ptr<Gateway> gateway_;
};

} // namespace pglease::detail::etcd
