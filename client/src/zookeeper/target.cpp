// zookeeper/target.cpp -- parsing zookeeper:// URLs and encoding resource
// names into one path component (target.hpp says what is accepted).
#include "zookeeper/target.hpp"

#include "detail/endpoints.hpp"

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
		auto nodes = parse_host_list(hosts);
		if (!nodes)
			return nodes.error().code == Errc::invalid_argument ? bad_url(url, nodes.error().message)
			                                                    : nodes.error();
		// as zookeeper_init takes them: it splits each at its last ':' (so an
		// IPv6 host goes unbracketed) and reads the port with strtol base 0
		// (so the port is written back in decimal, never with a leading 0)
		for (const auto &node : *nodes)
			t.hosts += (t.hosts.empty() ? "" : ",") + node.host + ":" + std::to_string(node.port);
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
