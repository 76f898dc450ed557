// etcd/url.cpp -- parse_target (etcd/url.hpp): the etcd:// and etcds:// URLs.
#include "etcd/url.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

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

// query -- cacert=, cert=, key= of an etcds:// URL
Result<void>
query(std::string_view url, std::string_view text, Target &target)
{
	while (!text.empty()) {
		auto amp = text.find('&');
		std::string_view pair = text.substr(0, amp);
		text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
		auto eq = pair.find('=');
		std::string name(pair.substr(0, eq)), value;
		if (eq == std::string_view::npos || !percent_decoded(pair.substr(eq + 1), value) || value.empty())
			return bad(url, "query parameter \"" + name + "\" needs a value (a path: " + name + "=/path)");
		if (name == "cacert")
			target.ca_file = value;
		else if (name == "cert")
			target.cert_file = value;
		else if (name == "key")
			target.key_file = value;
		else
			return bad(url, "unknown query parameter \"" + name + "\" (etcds:// takes cacert=, cert=, key=)");
	}
	return {};
}

// readable -- path names a regular file this process can read
Result<void>
readable(const char *what, const std::string &path)
{
	std::string why;
	struct stat st {};
	if (::stat(path.c_str(), &st) != 0)
		why = std::strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (std::ifstream file(path); !file.good())
		why = errno != 0 ? std::strerror(errno) : "cannot be opened";
	if (why.empty())
		return {};
	return Error{Errc::invalid_argument, "22023",
	             std::string("etcd TLS: cannot read the ") + what + " file \"" + path + "\": " + why};
}

// tls_material -- the files the URL did not name, from options; each checked
Result<void>
tls_material(std::string_view url, const ClientOptions &options, Target &target)
{
	if (target.ca_file.empty())
		target.ca_file = options.tls_ca_file;
	if (target.cert_file.empty())
		target.cert_file = options.tls_cert_file;
	if (target.key_file.empty())
		target.key_file = options.tls_key_file;
	const bool any = !target.ca_file.empty() || !target.cert_file.empty() || !target.key_file.empty();
	if (!target.tls) {
		if (any)
			return bad(url,
			           "TLS material (cacert/cert/key or ClientOptions::tls_*) given, but etcd:// is plain "
			           "HTTP: write etcds://");
		return {};
	}
	if (target.cert_file.empty() != target.key_file.empty())
		return bad(url, "a client certificate needs both cert= and key= (or tls_cert_file and tls_key_file)");
	for (auto [what, path] : {std::pair{"CA (cacert)", &target.ca_file},
	                          std::pair{"client certificate (cert)", &target.cert_file},
	                          std::pair{"client key (key)", &target.key_file}})
		if (!path->empty())
			if (auto ok = readable(what, *path); !ok)
				return ok.error();
	return {};
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
		if (q != std::string_view::npos && !target.tls)
			return bad(url, "query parameters (cacert=, cert=, key=) belong to etcds:// (TLS)");
		if (auto ok = query(url, query_text, target); !ok)
			return ok.error();
		auto endpoints = parse_host_list(rest);
		if (!endpoints)
			return endpoints.error().code == Errc::invalid_argument ? bad(url, endpoints.error().message)
			                                                        : endpoints.error();
		target.endpoints = std::move(*endpoints);
		if (auto ok = tls_material(url, options, target); !ok)
			return ok.error();
		return target;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail::etcd
