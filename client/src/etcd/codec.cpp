// etcd/codec.cpp -- how the JSON gateway carries bytes and numbers
// (gateway.hpp): keys and values as base64, int64s as decimal strings.
#include <string>

#include "etcd/gateway.hpp"

namespace pglease::detail::etcd {

std::string
base64_encode(std::string_view bytes)
{
	static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	std::string out;
	out.reserve((bytes.size() + 2) / 3 * 4);
	std::size_t i = 0;
	for (; i + 2 < bytes.size(); i += 3) {
		unsigned v = static_cast<unsigned char>(bytes[i]) << 16 |
		             static_cast<unsigned char>(bytes[i + 1]) << 8 | static_cast<unsigned char>(bytes[i + 2]);
		out += alphabet[v >> 18 & 63];
		out += alphabet[v >> 12 & 63];
		out += alphabet[v >> 6 & 63];
		out += alphabet[v & 63];
	}
	if (i + 1 == bytes.size()) {
		unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
		out += alphabet[v >> 18 & 63];
		out += alphabet[v >> 12 & 63];
		out += "==";
	} else if (i + 2 == bytes.size()) {
		unsigned v = static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1])
		                                                              << 8;
		out += alphabet[v >> 18 & 63];
		out += alphabet[v >> 12 & 63];
		out += alphabet[v >> 6 & 63];
		out += '=';
	}
	return out;
}

std::string
base64_decode(std::string_view text)
{
	std::string out;
	unsigned acc = 0;
	int bits = 0;
	for (char c : text) {
		int v;
		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+')
			v = 62;
		else if (c == '/')
			v = 63;
		else
			continue; // padding
		acc = acc << 6 | static_cast<unsigned>(v);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out += static_cast<char>(acc >> bits & 0xff);
		}
	}
	return out;
}

std::int64_t
int64_of(const Json &object, const char *field) noexcept
{
	try {
		if (!object.is_object())
			return 0;
		auto it = object.find(field);
		if (it == object.end())
			return 0;
		if (it->is_number_integer())
			return it->get<std::int64_t>();
		if (it->is_string())
			return std::stoll(it->get<std::string>());
		return 0;
	} catch (...) {
		return 0;
	}
}

} // namespace pglease::detail::etcd
