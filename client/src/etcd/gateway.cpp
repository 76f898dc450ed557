// etcd/gateway.cpp -- every libcurl and nlohmann-json call of the etcd
// provider (gateway.hpp says why the JSON gateway).
//
// Connection trouble is Errc::unavailable and puts the endpoint in reconnect
// backoff (detail/backoff.hpp: jittered, doubling from
// ClientOptions::backoff_initial to backoff_max), the rule of the other
// providers; a request goes to the preferred endpoint (the last one that
// answered) and fails over to the next, all within the one deadline of the
// call (each endpoint tried gets an equal share of the time left).
// Every curl handle runs with CURLOPT_NOSIGNAL (no SIGALRM for timeouts;
// libcurl sends with MSG_NOSIGNAL, so no SIGPIPE either).
#include "etcd/gateway.hpp"

#include "detail/provider.hpp"
#include "pglease/error.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <optional>
#include <tuple>

namespace pglease::detail::etcd {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int grpc_cancelled = 1;
constexpr int grpc_unavailable = 14;

std::once_flag curl_initialized;

size_t
append_to_string(char *data, size_t size, size_t count, void *out) noexcept
{
	try {
		static_cast<std::string *>(out)->append(data, size * count);
		return size * count;
	} catch (...) {
		return 0; // aborts the transfer
	}
}

// WatchStream -- the state of one watch's write callback
struct WatchStream {
	bool deletes_only = true; // false: any event ends it
	std::string buffer;
	bool deleted = false; // the event that ended it (a DELETE, or any)
	bool canceled = false;
	std::int64_t compact_revision = 0; // canceled: the start revision was compacted
	std::string error;
};

// watch_chunk -- the gateway streams one JSON message per line; a DELETE
// event (or any, !deletes_only) ends the transfer (returning less than given
// aborts it)
size_t
watch_chunk(char *data, size_t size, size_t count, void *out) noexcept
{
	auto *stream = static_cast<WatchStream *>(out);
	try {
		stream->buffer.append(data, size * count);
		for (auto nl = stream->buffer.find('\n'); nl != std::string::npos; nl = stream->buffer.find('\n')) {
			std::string line = stream->buffer.substr(0, nl);
			stream->buffer.erase(0, nl + 1);
			Json message = Json::parse(line, nullptr, false);
			if (message.is_discarded() || !message.is_object())
				continue;
			if (message.contains("error")) {
				stream->error = message["error"].dump();
				return 0;
			}
			const Json &result = message.value("result", Json::object());
			if (result.value("canceled", false)) {
				stream->canceled = true;
				stream->compact_revision = int64_of(result, "compact_revision");
				return 0;
			}
			for (const Json &event : result.value("events", Json::array()))
				if (!stream->deletes_only || event.value("type", "") == "DELETE") {
					stream->deleted = true;
					return 0;
				}
		}
		return size * count;
	} catch (...) {
		return 0;
	}
}

} // namespace

// CurlHandle -- one easy handle (it keeps its connections for reuse)
class CurlHandle {
public:
	CurlHandle() : curl_(curl_easy_init())
	{
		if (!curl_)
			throw std::bad_alloc();
	}
	~CurlHandle()
	{
		curl_easy_cleanup(curl_);
		curl_slist_free_all(headers_);
	}
	CurlHandle(const CurlHandle &) = delete;
	CurlHandle &operator=(const CurlHandle &) = delete;

	// prepare -- a POST of body to url, bounded by the timeouts, with the
	// target's TLS material and the token (if any) in the Authorization header
	void prepare(const std::string &url, const std::string &body, milliseconds connect, milliseconds total,
	             const Target &target, const std::string &token)
	{
		curl_easy_reset(curl_);
		curl_slist_free_all(headers_);
		headers_ = nullptr;
		// no "Expect: 100-continue" round trip for larger bodies
		for (std::string h : {std::string("Content-Type: application/json"), std::string("Expect:"),
		                      token.empty() ? std::string() : "Authorization: " + token}) {
			if (h.empty())
				continue;
			curl_slist *more = curl_slist_append(headers_, h.c_str());
			if (!more)
				throw std::bad_alloc();
			headers_ = more;
		}
		error_[0] = '\0';
		curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error_);
		curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
		curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers_);
		curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
		curl_easy_setopt(curl_, CURLOPT_COPYPOSTFIELDS, body.c_str());
		curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max(connect.count(), 1L)));
		curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max(total.count(), 1L)));
		if (target.tls) {
			// verification on, always (libcurl's defaults, set so no reset can lose them)
			curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYPEER, 1L);
			curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYHOST, 2L);
			if (!target.ca_file.empty())
				curl_easy_setopt(curl_, CURLOPT_CAINFO, target.ca_file.c_str());
			if (!target.cert_file.empty()) {
				curl_easy_setopt(curl_, CURLOPT_SSLCERT, target.cert_file.c_str());
				curl_easy_setopt(curl_, CURLOPT_SSLKEY, target.key_file.c_str());
			}
		}
	}
	CURL *get() const noexcept { return curl_; }
	// what went wrong, in libcurl's words: its error buffer, else the code's text
	std::string why(CURLcode rc) const { return error_[0] ? error_ : curl_easy_strerror(rc); }

private:
	CURL *curl_;
	curl_slist *headers_ = nullptr;
	char error_[CURL_ERROR_SIZE] = {};
};

namespace {

// tls_refusal -- a failed transfer that no retry will mend, as the Error to
// give: the server's certificate refused (unknown CA, expired, another
// host), ours refused (a TLS alert from the server), a file libcurl could
// not use, or TLS spoken to a plain server; nullopt for the rest
std::optional<Error>
tls_refusal(CURLcode rc, const std::string &where, const std::string &why)
{
	auto has = [&](const char *text) { return why.find(text) != std::string::npos; };
	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		return Error{Errc::permission, "",
		             "etcd " + where + ": the server's TLS certificate was refused (" + why +
		                 "); check cacert= and the host name in the URL"};
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CIPHER:
		return Error{Errc::invalid_argument, "22023",
		             "etcd " + where + ": the TLS material could not be used (" + why + ")"};
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		if (has("wrong version number") || has("packet length too long"))
			return Error{Errc::invalid_argument, "22023",
			             "etcd " + where + ": the server does not speak TLS (" + why +
			                 "); write etcd:// for a plain-HTTP server"};
		if (has("alert"))
			return Error{Errc::permission, "",
			             "etcd " + where + ": the server refused the TLS connection (" + why +
			                 "); does it require a client certificate (cert=, key=) it trusts?"};
		return std::nullopt;
	default:
		return std::nullopt;
	}
}

// handshake_refusal -- why a TLS connection broke right after its handshake,
// if the server refuses our certificate: under TLS 1.3 the server checks the
// client's certificate after the client's side of the handshake is done, so
// its refusal may reach us as a reset instead of an alert.  A TLS 1.2
// handshake (connect only, within `budget`) gets the alert during the
// handshake; only on this failure path, the requests themselves keep TLS 1.3.
std::optional<Error>
handshake_refusal(CURLcode rc, const std::string &url, const Target &target, milliseconds budget)
{
	if (!target.tls || (rc != CURLE_SEND_ERROR && rc != CURLE_RECV_ERROR && rc != CURLE_SSL_CONNECT_ERROR &&
	                    rc != CURLE_GOT_NOTHING))
		return std::nullopt;
	try {
		CurlHandle probe;
		probe.prepare(url, std::string(), budget, budget, target, std::string());
		curl_easy_setopt(probe.get(), CURLOPT_SSLVERSION,
		                 static_cast<long>(CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2));
		curl_easy_setopt(probe.get(), CURLOPT_CONNECT_ONLY, 1L);
		CURLcode probed = curl_easy_perform(probe.get());
		if (probed == CURLE_OK)
			return std::nullopt;
		return tls_refusal(probed, url, probe.why(probed));
	} catch (...) {
		return std::nullopt;
	}
}

// token_refused -- etcd wants a (new) token: it expired or was dropped (auth
// disabled and enabled again), the auth store changed since it was issued,
// or none was sent while auth is on
bool
token_refused(const Reply &reply)
{
	const std::string &m = reply.message;
	return m.find("invalid auth token") != std::string::npos ||
	       m.find("auth store is old") != std::string::npos ||
	       m.find("user name is empty") != std::string::npos;
}

} // namespace

Gateway::Gateway(Target target, const ClientOptions &options) : options_(options), target_(std::move(target))
{
	std::call_once(curl_initialized, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
	for (auto &e : target_.endpoints)
		endpoints_.push_back(
		    EndpointState{std::move(e), Backoff{options.backoff_initial, options.backoff_max}, {}, {}});
}

Gateway::~Gateway() = default;

std::string
Gateway::url_of(std::size_t index, std::string_view path) const
{
	// to_string brackets an IPv6 host, as a URL (and curl) wants it
	return (target_.tls ? "https://" : "http://") + to_string(endpoints_[index].endpoint) + std::string(path);
}

std::unique_ptr<CurlHandle>
Gateway::borrow() noexcept
{
	{
		std::lock_guard<std::mutex> lk(mu_);
		if (!idle_.empty()) {
			auto h = std::move(idle_.back());
			idle_.pop_back();
			return h;
		}
	}
	try {
		return std::make_unique<CurlHandle>();
	} catch (...) {
		return nullptr;
	}
}

void
Gateway::give_back(std::unique_ptr<CurlHandle> handle) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	if (idle_.size() < options_.max_idle_connections) {
		try {
			idle_.push_back(std::move(handle));
		} catch (...) {
			// dropped
		}
	}
}

// attempt_order -- the endpoints not in backoff, the preferred one first
std::vector<std::size_t>
Gateway::attempt_order() noexcept
{
	std::vector<std::size_t> order;
	try {
		std::lock_guard<std::mutex> lk(mu_);
		auto now = Clock::now();
		for (std::size_t k = 0; k < endpoints_.size(); k++) {
			std::size_t i = (preferred_ + k) % endpoints_.size();
			if (now >= endpoints_[i].next_attempt)
				order.push_back(i);
		}
	} catch (...) {
		order.clear();
	}
	return order;
}

void
Gateway::reachable(std::size_t index) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	endpoints_[index].backoff.reset();
	endpoints_[index].next_attempt = {};
	preferred_ = index;
}

void
Gateway::unreachable(std::size_t index) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	EndpointState &e = endpoints_[index];
	e.next_attempt = Clock::now() + e.backoff.next();
	if (preferred_ == index)
		preferred_ = (index + 1) % endpoints_.size();
}

Clock::time_point
Gateway::call_deadline() const noexcept
{
	return deadline_after(Clock::now(), options_.statement_grace);
}

namespace {

// reply_of -- a gateway answer as a Reply: its body, and the gRPC error it
// carries if any (a streaming call's one message is unwrapped first)
Reply
reply_of(Json parsed)
{
	Reply reply;
	if (parsed.contains("result") && parsed["result"].is_object()) // a streaming call's one message
		parsed = parsed["result"];
	if (parsed.contains("error")) {
		const Json &e = parsed["error"];
		if (e.is_object()) { // a streaming call's error
			reply.grpc_code = static_cast<int>(int64_of(e, "grpc_code"));
			reply.message = e.value("message", "");
		} else {
			reply.grpc_code = static_cast<int>(int64_of(parsed, "code"));
			reply.message = parsed.value("message", e.is_string() ? e.get<std::string>() : "");
		}
		if (reply.grpc_code == 0)
			reply.grpc_code = 2; // UNKNOWN
	}
	reply.body = std::move(parsed);
	return reply;
}

} // namespace

std::pair<std::string, std::uint64_t>
Gateway::token() noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	try {
		return {token_, token_gen_};
	} catch (...) {
		return {std::string(), token_gen_};
	}
}

// authenticate -- a new token for the target's user, unless another thread
// got one since the token of generation `stale` was read.  A refused
// password is Errc::permission; etcd with auth off leaves the token empty.
Result<void>
Gateway::authenticate(std::uint64_t stale, Clock::time_point deadline)
{
	std::lock_guard<std::mutex> one_at_a_time(auth_mu_);
	if (token().second != stale)
		return {};
	const Json request = {{"name", target_.user}, {"password", target_.password}};
	auto r = exchange("/v3/auth/authenticate", request.dump(), std::string(), deadline);
	if (!r)
		return r.error();
	std::string token;
	if (r->grpc_code != 0) {
		// 9 FAILED_PRECONDITION "authentication is not enabled": no token needed
		if (r->message.find("authentication is not enabled") == std::string::npos)
			return Error{Errc::permission, "",
			             "etcd: authentication of user \"" + target_.user + "\" refused: " + r->message};
	} else {
		token = r->body.value("token", "");
		if (token.empty())
			return Error{Errc::internal, "", "etcd: /v3/auth/authenticate answered no token"};
	}
	std::lock_guard<std::mutex> lk(mu_);
	token_ = std::move(token);
	token_gen_++;
	return {};
}

Result<Reply>
Gateway::post(std::string_view path, const Json &body, Clock::time_point deadline) noexcept
{
	try {
		const std::string payload = body.dump();
		if (target_.user.empty()) {
			auto r = exchange(path, payload, std::string(), deadline);
			if (r && r->grpc_code != 0 && r->message.find("user name is empty") != std::string::npos)
				return Error{Errc::permission, "",
				             "etcd requires authentication (" + r->message +
				                 "): write etcd[s]://user:password@host:port,..."};
			return r;
		}
		auto [sent, generation] = token();
		if (generation == 0) {
			if (auto ok = authenticate(0, deadline); !ok)
				return ok.error();
			std::tie(sent, generation) = token();
		}
		auto r = exchange(path, payload, sent, deadline);
		if (!r || r->grpc_code == 0 || !token_refused(*r))
			return r;
		// once: a token refused right after it was issued is not an expiry
		if (auto ok = authenticate(generation, deadline); !ok)
			return ok.error();
		r = exchange(path, payload, token().first, deadline);
		if (r && r->grpc_code != 0 && token_refused(*r))
			return Error{Errc::permission, "",
			             "etcd refused the token of user \"" + target_.user +
			                 "\" just issued: " + r->message};
		return r;
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", std::string("etcd: ") + e.what()};
	}
}

// exchange -- one request, failing over among the endpoints (post's rules)
Result<Reply>
Gateway::exchange(std::string_view path, const std::string &payload, const std::string &token,
                  Clock::time_point deadline)
{
	std::string failures;
	std::optional<Error> refused; // a TLS refusal: reported if nobody answers
	auto order = attempt_order();
	if (order.empty()) {
		std::lock_guard<std::mutex> lk(mu_);
		std::string last;
		for (const auto &e : endpoints_)
			last += (last.empty() ? "" : "; ") + e.last_error;
		return Error{Errc::unavailable, "",
		             "etcd: every endpoint is in reconnect backoff (last errors: " + last + ")"};
	}
	for (std::size_t k = 0; k < order.size(); k++) {
		const std::size_t i = order[k];
		auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now());
		if (left <= milliseconds{0}) {
			failures += (failures.empty() ? "" : "; ") + std::string("the call's deadline passed");
			break;
		}
		// an equal share of what is left for this endpoint and each one
		// after it: a frozen member (its kernel still accepts the
		// connection, nobody answers) costs its share, not the whole call
		auto share = left / static_cast<long>(order.size() - k);
		auto handle = borrow();
		if (!handle)
			return Error{Errc::internal, "", "out of memory"};
		std::string url = url_of(i, path);
		std::string received;
		handle->prepare(url, payload, std::min(options_.connect_timeout, share), share, target_, token);
		curl_easy_setopt(handle->get(), CURLOPT_WRITEFUNCTION, append_to_string);
		curl_easy_setopt(handle->get(), CURLOPT_WRITEDATA, &received);
		CURLcode rc = curl_easy_perform(handle->get());
		if (rc != CURLE_OK) {
			std::string what = "etcd " + url + ": " + handle->why(rc);
			failures += (failures.empty() ? "" : "; ") + what;
			auto tls = tls_refusal(rc, url, handle->why(rc));
			if (!tls)
				tls = handshake_refusal(rc, url, target_,
				                        std::min(options_.connect_timeout,
				                                 std::chrono::ceil<milliseconds>(deadline - Clock::now())));
			if (tls) {
				refused = std::move(tls); // not a reachability problem: no backoff
				continue;
			}
			unreachable(i);
			{
				std::lock_guard<std::mutex> lk(mu_);
				endpoints_[i].last_error = what;
			}
			continue; // the handle is dropped with its broken connection
		}
		give_back(std::move(handle));
		Json parsed = Json::parse(received, nullptr, false);
		if (parsed.is_discarded() || !parsed.is_object()) {
			if (received.find("HTTP request to an HTTPS server") != std::string::npos)
				return Error{Errc::invalid_argument, "22023",
				             "etcd " + url + ": the server speaks TLS only: write etcds:// (with cacert=)"};
			return Error{Errc::internal, "",
			             "etcd " + url + ": not a JSON object: " + received.substr(0, 200)};
		}
		Reply reply = reply_of(std::move(parsed));
		if (reply.grpc_code == grpc_unavailable || reply.grpc_code == grpc_cancelled) {
			// no leader, or the member is stopping (its gateway's own connection
			// "is closing": CANCELLED): another member may answer.  Every
			// request here may be sent again (reads, a put-if-absent, a
			// keep-alive, a revoke or delete of what may be gone already).
			failures += (failures.empty() ? "" : "; ") + ("etcd " + url + ": " + reply.message);
			continue;
		}
		reachable(i);
		return reply;
	}
	if (refused)
		return *refused;
	return Error{Errc::unavailable, "", failures};
}

Result<bool>
Gateway::wait_deleted(std::string_view key, std::int64_t start_revision, milliseconds timeout) noexcept
{
	auto end = watch(key, {}, start_revision, timeout, true);
	if (!end)
		return end.error();
	if (*end == WatchEnd::compacted)
		return Error{Errc::unavailable, "", "etcd watch canceled: its start revision was compacted"};
	return *end == WatchEnd::event;
}

Result<WatchEnd>
Gateway::watch(std::string_view key, std::string_view range_end, std::int64_t start_revision,
               milliseconds timeout, bool deletes_only) noexcept
{
	try {
		std::size_t index;
		{
			std::lock_guard<std::mutex> lk(mu_);
			index = preferred_;
		}
		Json create = {{"key", base64_encode(key)}, {"start_revision", std::to_string(start_revision)}};
		if (!range_end.empty())
			create["range_end"] = base64_encode(range_end);
		Json request = {{"create_request", create}};
		CurlHandle handle; // a stream ends its connection's reuse: a handle of its own
		WatchStream stream;
		stream.deletes_only = deletes_only;
		std::string url = url_of(index, "/v3/watch");
		handle.prepare(url, request.dump(), options_.connect_timeout, timeout, target_, token().first);
		curl_easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, watch_chunk);
		curl_easy_setopt(handle.get(), CURLOPT_WRITEDATA, &stream);
		CURLcode rc = curl_easy_perform(handle.get());
		if (stream.deleted)
			return WatchEnd::event;
		if (stream.canceled && stream.compact_revision > 0)
			return WatchEnd::compacted;
		if (rc == CURLE_OPERATION_TIMEDOUT)
			return WatchEnd::timeout;
		std::string why = !stream.error.empty() ? stream.error
		                  : stream.canceled     ? std::string("watch canceled")
		                                        : handle.why(rc);
		if (rc == CURLE_OK)
			why = "the watch stream ended";
		return Error{Errc::unavailable, "", "etcd " + url + ": " + why};
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", std::string("etcd: ") + e.what()};
	}
}

} // namespace pglease::detail::etcd
