// etcd/url.cpp -- parse_target (etcd/url.hpp): the etcd:// and etcds:// URLs;
// their TLS material is read as every provider's (detail/tls.hpp), after
// lock_prefix= and election_prefix= are taken out of the query.
#include "etcd/url.hpp"

#include "detail/provider.hpp"
#include "detail/tls.hpp"
#include "pglease/error.hpp"

namespace pglease::detail::etcd {

namespace {

// bad -- the URL as an error may show it (its password masked) and what is wrong
Error
bad(std::string_view url, const std::string &what)
{
	return Error{Errc::invalid_argument, "22023", "invalid etcd URL \"" + redact(url, url) + "\": " + what};
}

// credentials -- user:password (percent-decoded) into target; the password
// is never quoted
Result<void>
credentials(std::string_view url, std::string_view userinfo, Target &target)
{
	if (userinfo.find_first_of(",/") != std::string_view::npos)
		return bad(url, "a ',' or '/' in the user or password (write it %2C, %2F), or credentials after the "
		                "first host: etcd[s]://user:password@h1:p1,h2:p2");
	auto colon = userinfo.find(':');
	if (colon == std::string_view::npos)
		return bad(url, "a user needs its password: write user:password@ (etcd's password authentication)");
	if (!percent_decoded(userinfo.substr(0, colon), target.user))
		return bad(url, "a broken %XX escape in the user name");
	if (!percent_decoded(userinfo.substr(colon + 1), target.password))
		return Error{Errc::invalid_argument, "22023",
		             "invalid etcd URL: a broken %XX escape in the password"};
	if (target.user.empty())
		return bad(url, "an empty user name: etcd authenticates a named user (user:password@)");
	if (target.password.empty())
		return bad(url, "an empty password for user \"" + target.user + "\"");
	return {};
}

// tls_material -- the TLS material of the URL's query, completed from
// options and checked (detail/tls.hpp), into target
Result<void>
tls_material(std::string_view url, std::string_view query, const ClientOptions &options, Target &target)
{
	TlsFiles files;
	if (std::string problem = tls_query_problem(query, files); !problem.empty())
		return bad(url, problem);
	tls_files_from(options, files);
	if (!target.tls) {
		if (files.any())
			return bad(url,
			           "TLS material (cacert/cert/key or ClientOptions::tls_*) given, but etcd:// is plain "
			           "HTTP: write etcds://");
		return {};
	}
	if (std::string problem = tls_files_problem(files); !problem.empty())
		return Error{Errc::invalid_argument, "22023", "etcd TLS: " + problem};
	target.ca_file = std::move(files.ca_file);
	target.cert_file = std::move(files.cert_file);
	target.key_file = std::move(files.key_file);
	return {};
}

// key_prefixes -- lock_prefix= and election_prefix= taken out of query into
// target; the rest of the query (the TLS parameters) is returned
Result<std::string>
key_prefixes(std::string_view url, std::string_view query, Target &target)
{
	std::string rest;
	bool lock_given = false, election_given = false;
	while (!query.empty()) {
		auto amp = query.find('&');
		std::string_view pair = query.substr(0, amp);
		query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
		auto eq = pair.find('=');
		std::string_view name = pair.substr(0, eq);
		bool lock = name == "lock_prefix";
		if (!lock && name != "election_prefix") {
			rest += (rest.empty() ? "" : "&") + std::string(pair);
			continue;
		}
		bool &given = lock ? lock_given : election_given;
		if (given)
			return bad(url, std::string(name) + "= given twice");
		given = true;
		std::string &value = lock ? target.lock_prefix : target.election_prefix;
		value.clear();
		if (eq == std::string_view::npos)
			return bad(url, std::string(name) + " needs a value (" + std::string(name) +
			                    "=prefix/, may be empty)");
		if (!percent_decoded(pair.substr(eq + 1), value))
			return bad(url, "a broken %XX escape in " + std::string(name) + "=");
		if (auto ok = check_label(name, value, max_resource_bytes); !ok)
			return bad(url, ok.error().message);
	}
	return rest;
}

} // namespace

Result<Target>
parse_target(std::string_view url, const ClientOptions &options) noexcept
{
	try {
		Target target;
		std::string_view rest;
		if (url.rfind("etcds://", 0) == 0) {
			target.tls = true;
			rest = url.substr(8);
		} else if (url.rfind("etcd://", 0) == 0) {
			rest = url.substr(7);
		} else {
			return bad(url, "does not start with etcd:// or etcds://");
		}
		auto q = rest.find('?');
		std::string_view query_text = q == std::string_view::npos ? std::string_view{} : rest.substr(q + 1);
		rest = rest.substr(0, q);
		if (auto at = rest.rfind('@'); at != std::string_view::npos) {
			if (auto ok = credentials(url, rest.substr(0, at), target); !ok)
				return ok.error();
			rest = rest.substr(at + 1);
		}
		if (!rest.empty() && rest.back() == '/')
			rest.remove_suffix(1);
		if (rest.find_first_of("/#") != std::string_view::npos)
			return bad(url, "no path or fragment: etcd[s]://[user:password@]host:port[,host:port...]");
		auto tls_query = key_prefixes(url, query_text, target);
		if (!tls_query)
			return tls_query.error();
		if (!tls_query->empty() && !target.tls)
			return bad(url, "query parameters other than lock_prefix= and election_prefix= (cacert=, cert=, "
			                "key=) belong to etcds:// (TLS)");
		auto endpoints = parse_host_list(rest);
		if (!endpoints)
			return endpoints.error().code == Errc::invalid_argument ? bad(url, endpoints.error().message)
			                                                        : endpoints.error();
		target.endpoints = std::move(*endpoints);
		if (auto ok = tls_material(url, *tls_query, options, target); !ok)
			return ok.error();
		return target;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail::etcd
