// etcd/election.cpp -- reading an election kept in etcd's concurrency.Election
// layout (etcd/election.hpp; docs/election.md#etcd): one sorted range read
// for the leader, a watch on the prefix for the next change.
//
// Why a watch on the whole prefix and not on the leader's key alone: a new
// candidate never changes the view, but the leader's resignation, the expiry
// of its lease (etcd deletes its key: a DELETE event) and its proclamation
// (a PUT on its key) all do, and a watch on the prefix from the revision
// after the read misses none of them, whoever the leader was.  Every event
// is followed by a read, so a candidate queueing costs a read, no more.
//
// A watch canceled because its start revision was compacted (etcd #7815:
// concurrency.Election's Observe went silent there) is not an end: the view
// is read again and the watch starts from that read's revision.  A watch
// that fails (a member going away) is retried after a short pause by the
// same read, through the gateway's failover; each watch is also cut at
// longest_watch, a bounded re-read as a safety net.
#include "etcd/election.hpp"

#include <algorithm>
#include <thread>

namespace pglease::detail::etcd {

namespace {

constexpr milliseconds longest_watch{5000};

// view_of -- the LeaderView of a first_key read
LeaderView
view_of(const Api::Range &read)
{
	LeaderView view;
	if (read.kvs.empty())
		return view;
	view.has_leader = true;
	view.term = read.kvs[0].create_revision;
	view.value = read.kvs[0].value;
	return view; // since: the epoch, etcd keeps no time with a key
}

} // namespace

Result<LeaderView>
leader_view(Api &api, const std::string &prefix, Clock::time_point deadline)
{
	auto read = api.first_key(prefix, deadline);
	if (!read)
		return read.error();
	return view_of(*read);
}

Result<LeaderView>
next_view(Api &api, const std::string &prefix, const LeaderView &seen, Clock::time_point deadline)
{
	const std::string end = prefix_end(prefix);
	for (;;) {
		auto read = api.first_key(prefix, api.gateway().call_deadline());
		if (!read) {
			if (read.error().code == Errc::unavailable && Clock::now() + watch_retry < deadline) {
				std::this_thread::sleep_for(watch_retry); // failing over, maybe
				continue;
			}
			return read.error();
		}
		LeaderView view = view_of(*read);
		auto now = Clock::now();
		if (changed(seen, view) || now >= deadline)
			return view;
		auto slice = std::min(std::chrono::ceil<milliseconds>(deadline - now), longest_watch);
		auto ended = api.gateway().watch(prefix, end, read->revision + 1, slice, false);
		if (!ended) // the watch failed: read again after a pause
			std::this_thread::sleep_for(std::min(watch_retry, slice));
		// an event, the slice's end, or a compaction: read again
	}
}

} // namespace pglease::detail::etcd
