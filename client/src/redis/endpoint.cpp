// redis/endpoint.cpp -- parsing of redis://, rediss://, redlock://,
// redlocks:// and redis+sentinel:// URLs (see endpoint.hpp for the accepted
// forms and why); the host:port list is detail/endpoints.cpp's, the TLS
// material detail/tls.cpp's.
#include "redis/endpoint.hpp"

#include <algorithm>
#include <limits>
#include <new>
#include <tuple>

#include "detail/tls.hpp"

namespace pglease::detail::redis {

namespace {

constexpr std::string_view redis_scheme = "redis://";
constexpr std::string_view redlock_scheme = "redlock://";
constexpr std::string_view redis_tls_scheme = "rediss://";
constexpr std::string_view redlock_tls_scheme = "redlocks://";
constexpr std::string_view sentinel_scheme = "redis+sentinel://";
constexpr std::string_view tls_sentinel_scheme = "rediss+sentinel://";
constexpr std::size_t redlock_min_nodes = 3;

// masked -- the URL as an error message may show it: never a password.  What
// lies between the scheme and the last '@' is userinfo (a password may hold
// '/', ':' or ',', so no other delimiter is trusted) and becomes "***"; a
// query or fragment (which may carry password=...) becomes "?***".
std::string
masked(std::string_view url)
{
	std::string_view scheme;
	if (auto sep = url.find("://"); sep != std::string_view::npos) {
		scheme = url.substr(0, sep + 3);
		url.remove_prefix(sep + 3);
	}
	std::string out{scheme};
	if (auto at = url.rfind('@'); at != std::string_view::npos) {
		out += "***@";
		url.remove_prefix(at + 1);
	}
	if (auto query = url.find_first_of("?#"); query != std::string_view::npos)
		return out + std::string(url.substr(0, query + 1)) + "***";
	return out + std::string(url);
}

Error
bad_url(std::string_view url, const std::string &what)
{
	return Error{Errc::invalid_argument, "", "invalid Redis URL \"" + masked(url) + "\": " + what};
}

// parse_decimal -- a non-empty run of digits no larger than max, else -1
long
parse_decimal(std::string_view s, long max)
{
	if (s.empty() || s.size() > 10)
		return -1;
	long value = 0;
	for (char c : s) {
		if (c < '0' || c > '9')
			return -1;
		value = value * 10 + (c - '0');
	}
	return value <= max ? value : -1;
}

// credentials_of -- "[user]:password" (the userinfo before the last '@');
// no message quotes any part of it
Result<Credentials>
credentials_of(std::string_view url, std::string_view userinfo)
{
	auto colon = userinfo.find(':');
	if (colon == std::string_view::npos)
		return bad_url(url, "credentials must be [user]:password@ (a ':' before the password; "
		                    "redis://:password@host:port for the default user)");
	Credentials c;
	if (!percent_decoded(userinfo.substr(0, colon), c.user) ||
	    !percent_decoded(userinfo.substr(colon + 1), c.password))
		return bad_url(url, "a '%' in the credentials is not followed by two hex digits "
		                    "(write '%' as %25)");
	if (c.password.empty())
		return bad_url(url, "the password is empty (leave out the credentials for a server "
		                    "without a password)");
	return c;
}

// after_scheme -- the URL after its scheme: whether it is Redlock's, TLS or
// Sentinel's; rediss+sentinel:// is named as not supported
Result<std::string_view>
after_scheme(std::string_view url, Target &target, bool &tls)
{
	for (auto [scheme, is_redlock, is_tls] :
	     {std::tuple{redis_scheme, false, false}, std::tuple{redlock_scheme, true, false},
	      std::tuple{redis_tls_scheme, false, true}, std::tuple{redlock_tls_scheme, true, true}})
		if (url.substr(0, scheme.size()) == scheme) {
			target.redlock = is_redlock;
			tls = is_tls;
			return url.substr(scheme.size());
		}
	if (url.substr(0, sentinel_scheme.size()) == sentinel_scheme) {
		target.sentinel = true;
		return url.substr(sentinel_scheme.size());
	}
	if (url.substr(0, tls_sentinel_scheme.size()) == tls_sentinel_scheme)
		return bad_url(url, "the scheme rediss+sentinel:// (TLS to Sentinels and nodes) is not "
		                    "supported; use redis+sentinel:// on a trusted network");
	return bad_url(url,
	               "the scheme must be redis://, rediss://, redlock://, redlocks:// or redis+sentinel://");
}

// parse_db -- the /db of a URL (empty: 0).  SELECT takes 0 .. databases-1,
// and redis.conf's databases is at most INT_MAX: a larger index can never
// exist.  Which ones exist depends on the server (16 by default), so the
// server's "DB index is out of range" is judged at the first call
// (Errc::invalid_argument, redis/connection.cpp).
Result<int>
parse_db(std::string_view url, std::string_view db)
{
	if (db.empty())
		return 0;
	long n = parse_decimal(db, std::numeric_limits<int>::max() - 1L);
	if (n < 0)
		return bad_url(url, "database \"" + std::string(db) + "\" is not a number from 0 to " +
		                        std::to_string(std::numeric_limits<int>::max() - 1L));
	return static_cast<int>(n);
}

// sentinel_path -- "MASTER_NAME[/db]" of a redis+sentinel:// URL: the name
// into target, the rest (a db or nothing) returned
Result<std::string_view>
sentinel_path(std::string_view url, std::string_view path, Target &target)
{
	auto slash = path.find('/');
	std::string_view name = path.substr(0, slash);
	if (name.empty())
		return bad_url(url, "redis+sentinel:// needs the master's name after the Sentinels: "
		                    "redis+sentinel://s1:p1,s2:p2,s3:p3/MASTER_NAME[/db]");
	if (!percent_decoded(name, target.master_name))
		return bad_url(url, "a '%' in the master name is not followed by two hex digits");
	for (unsigned char c : target.master_name)
		if (c <= ' ' || c == 0x7f || c == '/')
			return bad_url(url, "the master name holds a space, a control character or '/'");
	return slash == std::string_view::npos ? std::string_view{} : path.substr(slash);
}

// tls_of -- the TLS of a rediss:// or redlocks:// URL from its query and
// options, every file loaded; TLS material for a plain scheme is refused
Result<void>
tls_of(std::string_view url, std::string_view query, bool tls, const ClientOptions &options, Target &target)
{
	TlsFiles files;
	if (std::string problem = tls_query_problem(query, files); !problem.empty())
		return bad_url(url, problem);
	tls_files_from(options, files);
	if (!tls) {
		if (files.any() || !query.empty())
			return bad_url(url, "TLS material (cacert=, cert=, key= or ClientOptions::tls_*) given, but "
			                    "redis:// and redlock:// are plain TCP: write rediss:// or redlocks://");
		return {};
	}
	if (std::string problem = tls_files_problem(files); !problem.empty())
		return Error{Errc::invalid_argument, "", "Redis TLS: " + problem};
	auto context = TlsContext::create(files);
	if (!context)
		return Error{context.error().code, "", "Redis " + context.error().message};
	target.tls = std::move(*context);
	return {};
}

Result<Target>
parse(std::string_view url, const ClientOptions &options)
{
	Target target;
	bool tls = false;
	auto after = after_scheme(url, target, tls);
	if (!after)
		return after.error();
	std::string_view rest = *after;
	// before anything quotes a part of the URL: userinfo may hold a password,
	// and a password may hold '@', so the last '@' ends it
	if (auto at = rest.rfind('@'); at != std::string_view::npos) {
		auto credentials = credentials_of(url, rest.substr(0, at));
		if (!credentials)
			return credentials.error();
		target.credentials = std::move(*credentials);
		rest.remove_prefix(at + 1);
	}
	if (rest.find('#') != std::string_view::npos)
		return bad_url(url, "fragments are not supported");
	std::string_view query;
	if (auto q = rest.find('?'); q != std::string_view::npos) {
		query = rest.substr(q + 1);
		rest = rest.substr(0, q);
		if (!tls)
			return bad_url(url, "query parameters (cacert=, cert=, key=) belong to rediss:// and "
			                    "redlocks:// (TLS); redis://, redlock:// and redis+sentinel:// take none");
	}
	auto slash = rest.find('/');
	std::string_view authority = rest.substr(0, slash);
	std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
	if (target.sentinel) {
		auto db_part = sentinel_path(url, path, target);
		if (!db_part)
			return db_part.error();
		path = db_part->empty() ? std::string_view{} : db_part->substr(1);
	}
	auto db = parse_db(url, path);
	if (!db)
		return db.error();
	target.db = *db;
	auto nodes = parse_host_list(authority);
	if (!nodes)
		return nodes.error().code == Errc::invalid_argument ? bad_url(url, nodes.error().message)
		                                                    : nodes.error();
	for (auto &node : *nodes) {
		if (std::find(target.nodes.begin(), target.nodes.end(), node) != target.nodes.end())
			return bad_url(url, "node " + to_string(node) + " is named twice" +
			                        (target.sentinel ? "" : " (it would vote twice)"));
		target.nodes.push_back(std::move(node));
	}
	if (!target.redlock && !target.sentinel && target.nodes.size() != 1)
		return bad_url(url, "redis:// takes one node; use redlock:// for several independent nodes "
		                    "or redis+sentinel:// for Sentinels");
	if (target.redlock && target.nodes.size() < redlock_min_nodes)
		return bad_url(url, "redlock:// needs at least " + std::to_string(redlock_min_nodes) +
		                        " independent nodes, got " + std::to_string(target.nodes.size()));
	if (auto ok = tls_of(url, query, tls, options, target); !ok)
		return ok.error();
	return target;
}

} // namespace

Result<Target>
parse_url(std::string_view url, const ClientOptions &options) noexcept
{
	try {
		return parse(url, options);
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail::redis
