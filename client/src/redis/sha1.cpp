// redis/sha1.cpp -- SHA-1 (FIPS 180-4), only to name Lua scripts for EVALSHA;
// nothing here is used for security.
#include "redis/sha1.hpp"

#include <array>
#include <cstdint>

namespace pglease::detail::redis {

namespace {

constexpr std::uint32_t
rotl(std::uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

// sha1_block -- fold one 64-byte block into the state
void
sha1_block(std::array<std::uint32_t, 5> &h, const unsigned char *block)
{
	std::array<std::uint32_t, 80> w{};
	for (int i = 0; i < 16; i++)
		w[i] = std::uint32_t(block[4 * i]) << 24 | std::uint32_t(block[4 * i + 1]) << 16 |
		       std::uint32_t(block[4 * i + 2]) << 8 | std::uint32_t(block[4 * i + 3]);
	for (int i = 16; i < 80; i++)
		w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);

	std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
	for (int i = 0; i < 80; i++) {
		std::uint32_t f, k;
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5A827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ED9EBA1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8F1BBCDC;
		} else {
			f = b ^ c ^ d;
			k = 0xCA62C1D6;
		}
		std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rotl(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

} // namespace

std::string
sha1_hex(std::string_view data)
{
	std::array<std::uint32_t, 5> h{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
	const auto *bytes = reinterpret_cast<const unsigned char *>(data.data());
	std::size_t full = data.size() / 64 * 64;
	for (std::size_t off = 0; off < full; off += 64)
		sha1_block(h, bytes + off);

	// the tail, a 1 bit, zeros, and the length in bits (big-endian) in one or two blocks
	std::array<unsigned char, 128> tail{};
	std::size_t n = data.size() - full;
	for (std::size_t i = 0; i < n; i++)
		tail[i] = bytes[full + i];
	tail[n] = 0x80;
	std::size_t tail_size = n < 56 ? 64 : 128;
	std::uint64_t bits = std::uint64_t(data.size()) * 8;
	for (int i = 0; i < 8; i++)
		tail[tail_size - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
	for (std::size_t off = 0; off < tail_size; off += 64)
		sha1_block(h, tail.data() + off);

	static constexpr char hex[] = "0123456789abcdef";
	std::string out;
	out.reserve(40);
	for (std::uint32_t word : h)
		for (int shift = 28; shift >= 0; shift -= 4)
			out.push_back(hex[(word >> shift) & 0xF]);
	return out;
}

} // namespace pglease::detail::redis
