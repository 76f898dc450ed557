// resp.hpp -- the RESP plumbing over hiredis that the Redis connection
// (redis/connection.cpp) and Redlock's pipelined links (redlock/link.cpp)
// share: a command formatted into its wire text, an owned copy of hiredis's
// reply tree, and the one out-of-memory error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pglease/error.hpp"
#include "redis/connection.hpp"

struct redisReply;

namespace pglease::detail::redis {

/// The RESP text of ARGV appended to OUT; false when out of memory.
bool append_command(std::string &out, const std::vector<std::string_view> &argv) noexcept;

/// An owned Reply from hiredis's reply tree.
Reply copy_reply(const redisReply &r);

/// Frees a reply hiredis handed over.
struct ReplyDeleter {
	void operator()(redisReply *reply) const noexcept;
};

Error out_of_memory();

} // namespace pglease::detail::redis
