// zookeeper/target.cpp -- parsing zookeeper:// URLs, encoding resource
// names into one path component, and the names of the lock nodes in a folder
// (target.hpp says what is accepted).
#include "zookeeper/target.hpp"

#include "detail/endpoints.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

namespace pglease::detail::zookeeper {

namespace {

// masked -- the URL as an error message may show it: credentials replaced
// by "***", and the query and fragment, which may carry one, left out
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
	                 " (want zookeeper://[user:password@]host:port[,host:port...][/chroot])"};
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

// credentials_problem -- what is wrong with "user:password" (the URL's
// userinfo), or nothing; sets auth to the decoded "user:password" that
// zoo_add_auth's digest scheme takes.  Never quotes the password.
std::string
credentials_problem(std::string_view userinfo, std::string &auth)
{
	if (userinfo.find(',') != std::string_view::npos)
		return "a ',' in the credentials (they go before the first host, once; write a ',' of the "
		       "password as %2C)";
	auto colon = userinfo.find(':');
	if (colon == std::string_view::npos)
		return "credentials need a user name and a password (zookeeper://user:password@...)";
	std::string user, password;
	if (!percent_decoded(userinfo.substr(0, colon), user) ||
	    !percent_decoded(userinfo.substr(colon + 1), password))
		return "the user name or password has a malformed %XX escape";
	if (user.empty())
		return "the user name is empty (the digest scheme needs user:password)";
	if (password.empty())
		return "the password is empty";
	// the digest scheme splits "user:password" at its first ':'
	if (user.find(':') != std::string::npos)
		return "the user name must not contain ':'";
	for (char c : user + password)
		if (c == '\0')
			return "the user name or password contains a NUL byte";
	auth = user + ":" + password;
	return {};
}

constexpr std::string_view no_tls =
    "TLS is not available: Debian's ZooKeeper C client (libzookeeper-mt) is built without it, so "
    "zookeepers://, cacert=, cert= and key= are refused; reach the ensemble over a trusted network or "
    "a TLS tunnel (stunnel, a service mesh) to a plain zookeeper:// port";

} // namespace

Result<Target>
parse_url(std::string_view url) noexcept
{
	try {
		constexpr std::string_view scheme = "zookeeper://";
		if (url.substr(0, 13) == "zookeepers://")
			return bad_url(url, std::string{no_tls});
		if (url.substr(0, scheme.size()) != scheme)
			return bad_url(url, "not a zookeeper:// URL");
		auto rest = url.substr(scheme.size());
		if (auto query = rest.find('?'); query != std::string_view::npos) {
			auto params = rest.substr(query + 1);
			for (std::string_view key : {"cacert=", "cert=", "key="})
				if (params.substr(0, key.size()) == key ||
				    params.find("&" + std::string{key}) != std::string_view::npos)
					return bad_url(url, std::string{no_tls});
		}
		if (rest.find_first_of("?#") != std::string_view::npos)
			return bad_url(url, "queries and fragments are not supported");
		auto slash = rest.find('/');
		std::string_view authority = rest.substr(0, slash);
		Target t;
		// the last '@' ends the credentials (a password may hold '@')
		if (auto at = authority.rfind('@'); at != std::string_view::npos) {
			if (auto problem = credentials_problem(authority.substr(0, at), t.auth); !problem.empty())
				return bad_url(url, problem);
			t.user = t.auth.substr(0, t.auth.find(':'));
			authority.remove_prefix(at + 1);
		}
		t.root = slash == std::string_view::npos ? "/pglease" : std::string{rest.substr(slash)};
		auto nodes = parse_host_list(authority);
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

std::string
election_folder(const Target &target, std::string_view election)
{
	return target.root + "/.election/" + encode_resource(election);
}

namespace {

// classify -- a protected queue node's sequence and kind: the 10 digits
// ZooKeeper appended, right after one of the recipes' names
std::optional<QueueNode>
classify(const std::string &name)
{
	static constexpr std::pair<std::string_view, NodeKind> markers[] = {
	    {"-lock-", NodeKind::lock}, {"-__READ__", NodeKind::read}, {"-__WRIT__", NodeKind::write}};
	if (name.size() < 10 || name.compare(0, 3, "_c_") != 0)
		return std::nullopt;
	auto digits = name.substr(name.size() - 10);
	if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
		return std::nullopt;
	auto stem = std::string_view{name}.substr(0, name.size() - 10);
	for (const auto &[marker, kind] : markers) {
		if (stem.size() > marker.size() + 3 && stem.substr(stem.size() - marker.size()) == marker)
			return QueueNode{name, std::stoll(digits), kind};
	}
	return std::nullopt;
}

} // namespace

long long
sequence_of(const std::string &name)
{
	auto node = classify(name);
	return node && node->kind == NodeKind::lock ? node->sequence : -1;
}

std::vector<QueueNode>
queue_in_order(const std::vector<std::string> &children)
{
	std::vector<QueueNode> queue;
	for (const auto &name : children)
		if (auto node = classify(name))
			queue.push_back(std::move(*node));
	std::sort(queue.begin(), queue.end(),
	          [](const QueueNode &a, const QueueNode &b) { return a.sequence < b.sequence; });
	return queue;
}

bool
has_own(const std::vector<QueueNode> &queue, const std::string &own_prefix)
{
	return std::any_of(queue.begin(), queue.end(), [&](const QueueNode &n) {
		return n.name.compare(0, own_prefix.size(), own_prefix) == 0;
	});
}

std::string
blocker(const std::vector<QueueNode> &queue, const std::string &own_prefix, bool shared)
{
	std::string nearest;
	for (const auto &node : queue) {
		if (node.name.compare(0, own_prefix.size(), own_prefix) == 0)
			return nearest; // sorted: everything after is later than us
		if (!shared || node.kind != NodeKind::read)
			nearest = node.name;
	}
	return {};
}

std::vector<std::string>
lock_nodes_in_order(std::vector<std::string> children)
{
	children.erase(std::remove_if(children.begin(), children.end(),
	                              [](const std::string &n) { return sequence_of(n) < 0; }),
	               children.end());
	std::sort(children.begin(), children.end(),
	          [](const std::string &a, const std::string &b) { return sequence_of(a) < sequence_of(b); });
	return children;
}

} // namespace pglease::detail::zookeeper
