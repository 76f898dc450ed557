// zookeeper/target.cpp -- parsing zookeeper:// URLs and encoding resource
// names into one path component (target.hpp says what is accepted).
#include "zookeeper/target.hpp"

#include <cctype>

namespace pglease::detail::zookeeper {

namespace {

Error
bad_url(std::string_view url, const std::string &why)
{
	return Error{Errc::invalid_argument, "",
	             "invalid ZooKeeper URL \"" + std::string{url} + "\": " + why +
	                 " (want zookeeper://host:port[,host:port...][/chroot])"};
}

// valid_host_port -- "host:port" with a non-empty host and a port 1-65535
bool
valid_host_port(std::string_view hp)
{
	auto colon = hp.rfind(':');
	if (colon == std::string_view::npos || colon == 0 || colon + 1 == hp.size() || colon + 6 < hp.size())
		return false;
	auto host = hp.substr(0, colon);
	for (char c : host)
		if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'))
			return false;
	long port = 0;
	for (char c : hp.substr(colon + 1)) {
		if (!std::isdigit(static_cast<unsigned char>(c)))
			return false;
		port = port * 10 + (c - '0');
	}
	return port >= 1 && port <= 65535;
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
		if (rest.find_first_of("?#@[]") != std::string_view::npos)
			return bad_url(url, "credentials, IPv6 literals, queries and fragments are not supported");
		auto slash = rest.find('/');
		Target t;
		t.hosts = std::string{rest.substr(0, slash)};
		t.root = slash == std::string_view::npos ? "/pglease" : std::string{rest.substr(slash)};
		if (t.hosts.empty())
			return bad_url(url, "no host");
		std::string_view hosts = t.hosts;
		for (std::size_t at = 0; at <= hosts.size();) {
			auto comma = hosts.find(',', at);
			auto hp = hosts.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
			if (!valid_host_port(hp))
				return bad_url(url, "\"" + std::string{hp} + "\" is not host:port with a port 1-65535");
			if (comma == std::string_view::npos)
				break;
			at = comma + 1;
		}
		if (t.root.size() > 1 && t.root.back() == '/')
			return bad_url(url, "the chroot must not end with '/'");
		if (t.root == "/")
			return bad_url(url, "the chroot must not be / itself");
		std::string_view root = t.root;
		for (std::size_t at = 1; at <= root.size();) {
			auto next = root.find('/', at);
			auto part = root.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at);
			if (part.empty() || part == "." || part == "..")
				return bad_url(url, "the chroot has an empty, \".\" or \"..\" component");
			for (char c : part)
				if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
					return bad_url(url, "the chroot has a control or non-ASCII character");
			if (next == std::string_view::npos)
				break;
			at = next + 1;
		}
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
