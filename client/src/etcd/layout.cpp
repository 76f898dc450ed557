// etcd/layout.cpp -- the etcd provider's key layout and its rules (layout.hpp).
#include "etcd/layout.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace pglease::detail::etcd {

// queue_prefix -- the prefix of the keys of one lock or election: the
// provider's prefix (lock_prefix= / election_prefix= of the URL) and the
// name, then "/" as concurrency.NewMutex / NewElection add it
std::string
queue_prefix(std::string_view base, std::string_view name)
{
	return std::string(base) + std::string(name) + "/";
}

// prefix_end -- the range_end that selects every key starting with prefix
std::string
prefix_end(std::string prefix)
{
	prefix.back() = static_cast<char>(prefix.back() + 1); // '/' + 1 = '0'
	return prefix;
}

// lease_hex -- a lease ID as a key's last part: 16 hex digits for a lock
// (the layout pglease always wrote), unpadded for an election, exactly as
// concurrency.Election writes it ("%x"), so a key names the same lease
// either way
std::string
lease_hex(std::int64_t lease, bool padded)
{
	char buf[17];
	std::snprintf(buf, sizeof buf, padded ? "%016" PRIx64 : "%" PRIx64, static_cast<std::uint64_t>(lease));
	return buf;
}

// is_lock_key -- a key of the queue at prefix: the rest is a lease ID in
// hex, 1 to 16 digits (etcd's own recipes do not pad it); a key with a '/'
// in the rest belongs to a nested name ("a/b" under "a")
bool
is_lock_key(std::string_view key, std::string_view prefix)
{
	if (key.substr(0, prefix.size()) != prefix || key.size() <= prefix.size() ||
	    key.size() > prefix.size() + 16)
		return false;
	for (char c : key.substr(prefix.size()))
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	return true;
}

namespace {

// decimal_run -- s is a run of lo..hi decimal digits
bool
decimal_run(std::string_view s, std::size_t lo, std::size_t hi)
{
	if (s.size() < lo || s.size() > hi)
		return false;
	return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

} // namespace

// shape_of -- what the key of the queue at prefix is; nullopt: not a key of
// this queue (another name's, or not a recipe's)
std::optional<KeyShape>
shape_of(std::string_view key, std::string_view prefix)
{
	if (key.substr(0, prefix.size()) != prefix)
		return std::nullopt;
	if (is_lock_key(key, prefix))
		return KeyShape{KeyKind::lock, 0};
	std::string_view rest = key.substr(prefix.size());
	auto after = [&](std::string_view head) {
		return rest.substr(0, head.size()) == head ? rest.substr(head.size()) : std::string_view{};
	};
	if (decimal_run(after("read/"), 17, 20))
		return KeyShape{KeyKind::reader, 0};
	if (decimal_run(after("write/"), 17, 20))
		return KeyShape{KeyKind::writer, 0};
	std::string_view permit = after("permit/");
	auto slash = permit.find('/');
	if (slash == std::string_view::npos || !decimal_run(permit.substr(slash + 1), 20, 20) ||
	    !decimal_run(permit.substr(0, slash), 1, 5) || permit[0] == '0')
		return std::nullopt;
	std::uint32_t limit = 0;
	for (char c : permit.substr(0, slash))
		limit = limit * 10 + static_cast<std::uint32_t>(c - '0');
	return KeyShape{KeyKind::permit, limit};
}

// shaped_key -- the key a grant of that shape queues under its lease
std::string
shaped_key(const std::string &prefix, KeyShape shape, std::int64_t lease)
{
	char digits[21];
	std::snprintf(digits, sizeof digits, "%020" PRIu64, static_cast<std::uint64_t>(lease));
	switch (shape.kind) {
	case KeyKind::reader:
		return prefix + "read/" + digits;
	case KeyKind::permit:
		return prefix + "permit/" + std::to_string(shape.limit) + "/" + digits;
	default:
		return prefix + lease_hex(lease, true);
	}
}

// blocker -- the key `mine` must outlast before it holds, of the keys of
// its queue created before it; nullptr: it holds now.  A lock (a writer)
// waits for every key ahead; a reader for every key ahead but readers; a
// permit for every key ahead but permits of its own limit, and for those
// only once `limit` of them are ahead.  For a reader and a lock: the latest
// such key, the one just before it (no herd).
const Kv *
blocker(const std::vector<Kv> &queue, const Kv &mine)
{
	const Kv *latest = nullptr;
	std::uint32_t permits_ahead = 0;
	bool other_ahead = false;
	for (const auto &kv : queue) {
		if (kv.create_revision >= mine.create_revision)
			continue;
		bool blocks = true;
		if (mine.shape.kind == KeyKind::reader) {
			blocks = kv.shape.kind != KeyKind::reader;
		} else if (mine.shape.kind == KeyKind::permit) {
			if (kv.shape.kind == KeyKind::permit && kv.shape.limit == mine.shape.limit)
				++permits_ahead;
			else
				other_ahead = true;
		}
		if (blocks && (!latest || kv.create_revision > latest->create_revision))
			latest = &kv;
	}
	if (mine.shape.kind == KeyKind::permit && !other_ahead && permits_ahead < mine.shape.limit)
		return nullptr;
	return latest;
}

namespace {

// limit_of -- the limit a key's grant names: a permit's, 0 for the others
std::uint32_t
limit_of(KeyShape shape)
{
	return shape.kind == KeyKind::permit ? shape.limit : 0;
}

// sharing_of -- what a limit makes of a resource, for LS003's message
std::string
sharing_of(std::uint32_t limit)
{
	return limit == 0 ? std::string{"a lock (exclusive or shared)"}
	                  : "a semaphore of " + std::to_string(limit) + " permits";
}

} // namespace

// mismatch -- the first key of the queue (the resource's current grants, or
// with none its first waiter) names another limit than `mine`: refused with
// LS003 (docs/shared-leases.md).  Every request compares itself with the
// same first key, so keys of two limits are never granted together; a key
// that raced past the check (the first key went between) still waits for
// every key ahead of another limit (blocker).
std::optional<Error>
mismatch(std::string_view resource, const std::vector<Kv> &queue, const Kv &mine)
{
	const Kv *first = &mine;
	for (const auto &kv : queue)
		if (kv.create_revision < first->create_revision)
			first = &kv;
	if (limit_of(first->shape) == limit_of(mine.shape))
		return std::nullopt;
	return Error{Errc::invalid_argument, "LS003",
	             "lease \"" + std::string(resource) + "\" is " + sharing_of(limit_of(first->shape)) +
	                 ", and this request asks for " + sharing_of(limit_of(mine.shape))};
}

} // namespace pglease::detail::etcd
