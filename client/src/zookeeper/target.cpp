// zookeeper/target.cpp -- parsing zookeeper:// URLs and encoding resource
// names into one path component (target.hpp says what is accepted).
#include "zookeeper/target.hpp"

#include <algorithm>
#include <cctype>

namespace pglease::detail::zookeeper {

namespace {

// masked -- the URL as an error message may show it: credentials (which
// this provider does not take, issue 22) replaced by "***", and the query
// and fragment, which may carry one, left out
std::string
masked(std::string_view url)
{
	std::string out{url.substr(0, url.find_first_of("?#"))};
	if (url.size() > out.size())
		out += "?...";
	auto scheme = out.find("://");
	auto from = scheme == std::string::npos ? 0 : scheme + 3;
	auto path = out.find('/', from);
	auto at = out.rfind('@', path == std::string::npos ? std::string::npos : path);
	if (at != std::string::npos && at >= from)
		out.replace(from, at - from, "***");
	return out;
}

Error
bad_url(std::string_view url, const std::string &why)
{
	return Error{Errc::invalid_argument, "",
	             "invalid ZooKeeper URL \"" + masked(url) + "\": " + why +
	                 " (want zookeeper://host:port[,host:port...][/chroot])"};
}

// valid_name -- a host name or IPv4 address: letters, digits, '.', '-', '_'
bool
valid_name(std::string_view host)
{
	if (host.empty())
		return false;
	for (char c : host)
		if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'))
			return false;
	return true;
}

// valid_ipv6 -- the inside of [...]: hex digits and ':' (with at least two),
// and '.' for an embedded IPv4 tail; getaddrinfo judges the rest
bool
valid_ipv6(std::string_view host)
{
	if (host.size() < 2 || std::count(host.begin(), host.end(), ':') < 2)
		return false;
	for (char c : host)
		if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'))
			return false;
	return true;
}

// host_port -- "host:port" or "[v6]:port" as the C client takes it
// ("host:port", "v6:port": it splits at the last ':' and reads the port
// with strtol base 0, so a leading 0 would be octal: the port is written
// back in decimal); empty when malformed
std::string
host_port(std::string_view hp)
{
	auto colon = hp.rfind(':');
	if (colon == std::string_view::npos)
		return {};
	auto host = hp.substr(0, colon);
	auto digits = hp.substr(colon + 1);
	if (digits.empty() || digits.size() > 5)
		return {};
	long port = 0;
	for (char c : digits) {
		if (!std::isdigit(static_cast<unsigned char>(c)))
			return {};
		port = port * 10 + (c - '0');
	}
	if (port < 1 || port > 65535)
		return {};
	if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
		host = host.substr(1, host.size() - 2);
		if (!valid_ipv6(host))
			return {};
	} else if (!valid_name(host)) {
		return {};
	}
	return std::string{host} + ":" + std::to_string(port);
}

// root_problem -- what is wrong with a chroot, or nothing
std::string
root_problem(std::string_view root)
{
	if (root.size() > 1 && root.back() == '/')
		return "the chroot must not end with '/'";
	if (root == "/")
		return "the chroot must not be / itself";
	// ZooKeeper's own tree (quotas, config): clients may not create there
	if (root == "/zookeeper" || root.substr(0, 11) == "/zookeeper/")
		return "the chroot must not be in /zookeeper, the server's own tree";
	for (std::size_t at = 1; at <= root.size();) {
		auto next = root.find('/', at);
		auto part = root.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at);
		if (part.empty() || part == "." || part == "..")
			return "the chroot has an empty, \".\" or \"..\" component";
		for (char c : part)
			if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
				return "the chroot has a control or non-ASCII character";
		if (next == std::string_view::npos)
			break;
		at = next + 1;
	}
	return {};
}

} // namespace

Result<Target>
parse_url(std::string_view url) noexcept
{
	try {
		constexpr std::string_view scheme = "zookeeper://";
		if (url.substr(0, scheme.size()) != scheme)
			return bad_url(url, "not a zookeeper:// URL");
		auto rest = url.substr(scheme.size());
		if (rest.find_first_of("?#@") != std::string_view::npos)
			return bad_url(url, "credentials, queries and fragments are not supported");
		auto slash = rest.find('/');
		std::string_view hosts = rest.substr(0, slash);
		Target t;
		t.root = slash == std::string_view::npos ? "/pglease" : std::string{rest.substr(slash)};
		if (hosts.empty())
			return bad_url(url, "no host");
		for (std::size_t at = 0; at <= hosts.size();) {
			auto comma = hosts.find(',', at);
			auto hp = hosts.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
			auto normal = host_port(hp);
			if (normal.empty())
				return bad_url(url, "\"" + std::string{hp} +
				                        "\" is not host:port or [IPv6]:port with a port 1-65535");
			t.hosts += (t.hosts.empty() ? "" : ",") + normal;
			if (comma == std::string_view::npos)
				break;
			at = comma + 1;
		}
		if (auto problem = root_problem(t.root); !problem.empty())
			return bad_url(url, problem);
		return t;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

std::string
encode_resource(std::string_view resource)
{
	static const char hex[] = "0123456789ABCDEF";
	std::string out;
	out.reserve(resource.size());
	for (char ch : resource) {
		auto c = static_cast<unsigned char>(ch);
		if (std::isalnum(c) || c == '_' || c == '-') {
			out += ch;
		} else {
			out += '%';
			out += hex[c >> 4];
			out += hex[c & 15];
		}
	}
	return out;
}

} // namespace pglease::detail::zookeeper
