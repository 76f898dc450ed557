// resp.cpp -- see resp.hpp
#include "redis/resp.hpp"

#include <hiredis/hiredis.h>

#include <memory>
#include <new>

namespace pglease::detail::redis {

bool
append_command(std::string &out, const std::vector<std::string_view> &argv) noexcept
{
	try {
		std::vector<const char *> ptrs;
		std::vector<size_t> lens;
		ptrs.reserve(argv.size());
		lens.reserve(argv.size());
		for (auto a : argv) {
			ptrs.push_back(a.data());
			lens.push_back(a.size());
		}
		char *formatted = nullptr;
		int len = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), ptrs.data(), lens.data());
		if (len < 0)
			return false;
		std::unique_ptr<char, void (*)(char *)> cmd(formatted, redisFreeCommand);
		out.append(formatted, static_cast<std::size_t>(len));
		return true;
	} catch (const std::bad_alloc &) {
		return false;
	}
}

Reply
copy_reply(const redisReply &r)
{
	Reply out;
	switch (r.type) {
	case REDIS_REPLY_INTEGER:
		out.kind = Reply::Kind::integer;
		out.integer = r.integer;
		break;
	case REDIS_REPLY_STATUS:
	case REDIS_REPLY_ERROR:
	case REDIS_REPLY_STRING:
		out.kind = r.type == REDIS_REPLY_STATUS  ? Reply::Kind::status
		           : r.type == REDIS_REPLY_ERROR ? Reply::Kind::error
		                                         : Reply::Kind::string;
		out.text.assign(r.str, r.len);
		break;
	case REDIS_REPLY_ARRAY:
		out.kind = Reply::Kind::array;
		out.elements.reserve(r.elements);
		for (std::size_t i = 0; i < r.elements; i++)
			out.elements.push_back(copy_reply(*r.element[i]));
		break;
	default: // REDIS_REPLY_NIL (RESP2 has no other types)
		break;
	}
	return out;
}

void
ReplyDeleter::operator()(redisReply *reply) const noexcept
{
	freeReplyObject(reply);
}

Error
out_of_memory()
{
	return Error{Errc::internal, "", "out of memory"};
}

} // namespace pglease::detail::redis
