// detail/endpoints.cpp -- parsing the host:port lists of the providers' URLs
// (endpoints.hpp says what is accepted and why).
#include "detail/endpoints.hpp"

#include <algorithm>
#include <new>

namespace pglease::detail {

namespace {

constexpr std::size_t max_host_bytes = 253; // a DNS name's limit
constexpr long max_port = 65535;

Error
refused(std::string what)
{
	return Error{Errc::invalid_argument, "", std::move(what)};
}

bool
name_char(char c) noexcept
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
	       c == '-' || c == '_';
}

bool
v6_char(char c) noexcept
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

// host_problem -- what is wrong with a host, or "" when it can be one
std::string
host_problem(std::string_view host, bool bracketed)
{
	if (host.size() > max_host_bytes)
		return "is longer than 253 bytes";
	if (!bracketed) {
		if (!std::all_of(host.begin(), host.end(), name_char))
			return "has a character a host name cannot have (letters, digits, '.', '-' and '_' only)";
		return "";
	}
	auto zone = host.find('%'); // fe80::1%eth0: the zone is a name
	std::string_view address = host.substr(0, zone);
	std::string_view zone_id = zone == std::string_view::npos ? std::string_view{} : host.substr(zone + 1);
	if (!std::all_of(address.begin(), address.end(), v6_char) ||
	    std::count(address.begin(), address.end(), ':') < 2)
		return "is not an IPv6 address (write a name or an IPv4 address without brackets)";
	if (zone != std::string_view::npos &&
	    (zone_id.empty() || !std::all_of(zone_id.begin(), zone_id.end(), name_char)))
		return "has a malformed IPv6 zone (letters, digits, '.', '-' and '_' only)";
	return "";
}

// parse_node -- "host:port" or "[v6]:port"
Result<HostPort>
parse_node(std::string_view node)
{
	const std::string quoted = "\"" + std::string(node) + "\"";
	if (node.empty())
		return refused("empty node (two commas in a row, or a trailing comma?)");
	const bool bracketed = node.front() == '[';
	std::string_view host;
	std::string_view port;
	if (bracketed) {
		auto close = node.find(']');
		if (close == std::string_view::npos)
			return refused("unterminated [ in " + quoted);
		host = node.substr(1, close - 1);
		port = node.substr(close + 1);
		if (port.empty() || port.front() != ':')
			return refused("missing port in " + quoted + " (write [addr]:port)");
		port.remove_prefix(1);
	} else {
		auto colon = node.rfind(':');
		if (colon == std::string_view::npos)
			return refused("missing port in " + quoted + " (write host:port)");
		host = node.substr(0, colon);
		port = node.substr(colon + 1);
		if (host.find(':') != std::string_view::npos)
			return refused("IPv6 address without brackets in " + quoted + " (write [addr]:port)");
	}
	if (host.empty())
		return refused("empty host in " + quoted);
	if (auto problem = host_problem(host, bracketed); !problem.empty())
		return refused("host \"" + std::string(host) + "\" " + problem);
	if (port.empty())
		return refused("missing port in " + quoted);
	int number = port_of(port);
	if (number == 0)
		return refused("port \"" + std::string(port) + "\" is not a number from 1 to 65535");
	return HostPort{std::string(host), number};
}

} // namespace

int
port_of(std::string_view digits) noexcept
{
	if (digits.empty() || digits.size() > 5)
		return 0;
	long port = 0;
	for (char c : digits) {
		if (c < '0' || c > '9')
			return 0;
		port = port * 10 + (c - '0');
	}
	return port <= max_port ? static_cast<int>(port) : 0;
}

bool
operator==(const HostPort &a, const HostPort &b) noexcept
{
	return a.port == b.port && a.host == b.host;
}

std::string
to_string(const HostPort &node)
{
	if (node.host.find(':') != std::string::npos)
		return "[" + node.host + "]:" + std::to_string(node.port);
	return node.host + ":" + std::to_string(node.port);
}

Result<std::vector<HostPort>>
parse_host_list(std::string_view list) noexcept
{
	try {
		if (list.empty())
			return refused("no host:port");
		std::vector<HostPort> nodes;
		for (std::size_t start = 0;;) {
			auto comma = list.find(',', start);
			auto node =
			    parse_node(list.substr(start, comma == std::string_view::npos ? comma : comma - start));
			if (!node)
				return node.error();
			nodes.push_back(std::move(*node));
			if (comma == std::string_view::npos)
				return nodes;
			start = comma + 1;
		}
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

namespace {

// hex_value -- a hex digit's value, or -1
int
hex_value(char c) noexcept
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

} // namespace

bool
percent_decoded(std::string_view in, std::string &out) noexcept
{
	out.clear();
	for (std::size_t i = 0; i < in.size(); i++) {
		if (in[i] != '%') {
			out += in[i];
			continue;
		}
		if (i + 2 >= in.size() || hex_value(in[i + 1]) < 0 || hex_value(in[i + 2]) < 0)
			return false;
		out += static_cast<char>(hex_value(in[i + 1]) * 16 + hex_value(in[i + 2]));
		i += 2;
	}
	return true;
}

} // namespace pglease::detail
