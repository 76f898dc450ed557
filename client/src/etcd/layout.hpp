// etcd/layout.hpp -- the etcd provider's key layout and its rules, shared
// with etcd's own recipes (clientv3/concurrency Mutex and Election, and
// experimental/recipes' RWMutex): which key a grant queues under, which
// keys belong to a queue, and which of them a key waits for.
//
// Prefixes: "pglease/lock/" below stands for the URL's lock_prefix= (its
// default); an election's keys lie under election_prefix= ("pglease/election/"
// by default).  The queue of a resource (or election) N is the prefix
// "pglease/lock/N/", as concurrency.NewMutex and NewElection add the "/".
//
// Keys of the queue at prefix P (docs/shared-leases.md, "etcd"):
// - P<lease id in hex>: a lock, the layout of concurrency.Mutex (etcdctl
//   lock), 16 digits as pglease always wrote it; an election's candidate,
//   unpadded ("%x", as concurrency.Election writes it), so a key names the
//   same lease either way.  Keys of resource "a/b" lie under the prefix of
//   resource "a", so a queue read keeps only keys whose rest after the
//   prefix is 1 to 16 hex digits;
// - P"read/<n>" and P"write/<n>": readers and writers of etcd's rwmutex
//   recipe (recipe.RWMutex: n is its UnixNano, 19 digits; pglease's readers
//   write n = the lease ID as 20 digits); a pglease writer is a lock;
// - P"permit/<limit>/<lease id as 20 digits>": a semaphore's permit.
// More than 16 digits after "read/", "write/" and the limit keep them apart
// from the lock keys of nested names ("a/read" locks "P read/<hex>").
//
// Rules, by create revision (etcd's cluster-wide revision counter: the
// token, and the order of the queue): the first key holds; a lock (a
// writer) waits for every older key of any shape, the recipe's "write/<n>"
// writers included; a reader for every older lock or writer key; a permit
// of a semaphore of N holds once fewer than N permit keys of its limit are
// older and no key of another shape is.  The limit is in every permit key's
// name, so each request sees it: one that names another limit than the
// oldest key of the queue (its grants, or with none its first waiter; a
// lock and a reader name 0) is refused with LS003.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pglease/result.hpp"

namespace pglease::detail::etcd {

/// The prefix of the keys of one lock or election: the provider's prefix
/// (lock_prefix= / election_prefix= of the URL) and the name, then "/".
[[nodiscard]] std::string queue_prefix(std::string_view base, std::string_view name);
/// The range_end that selects every key starting with prefix.
[[nodiscard]] std::string prefix_end(std::string prefix);
/// A lease ID as a key's last part: 16 hex digits for a lock, unpadded for
/// an election.
[[nodiscard]] std::string lease_hex(std::int64_t lease, bool padded = true);
/// A lock key (or a candidate's) of the queue at prefix: the rest is a lease
/// ID in hex, 1 to 16 digits (etcd's own recipes do not pad it); a key with
/// a '/' in the rest belongs to a nested name ("a/b" under "a").
[[nodiscard]] bool is_lock_key(std::string_view key, std::string_view prefix);

enum class KeyKind { lock, reader, writer, permit };

struct KeyShape {
	KeyKind kind = KeyKind::lock;
	std::uint32_t limit = 0; ///< a permit's
};

/// What the key of the queue at prefix is; nullopt: not a key of this
/// queue (another name's, or not a recipe's).
[[nodiscard]] std::optional<KeyShape> shape_of(std::string_view key, std::string_view prefix);
/// The key a grant of that shape queues under its lease.
[[nodiscard]] std::string shaped_key(const std::string &prefix, KeyShape shape, std::int64_t lease);

/// One key of a queue, as a range read returns it.
struct Kv {
	std::string key;
	std::int64_t create_revision = 0;
	std::int64_t lease = 0;
	std::string value; ///< the holder label; read only when asked for
	KeyShape shape;
};

/// The key `mine` must outlast before it holds, of the keys of its queue
/// created before it; nullptr: it holds now.  For a reader and a lock: the
/// latest such key, the one just before it (no herd).
[[nodiscard]] const Kv *blocker(const std::vector<Kv> &queue, const Kv &mine);
/// LS003 when the first key of the queue names another limit than `mine`.
[[nodiscard]] std::optional<Error> mismatch(std::string_view resource, const std::vector<Kv> &queue,
                                            const Kv &mine);

} // namespace pglease::detail::etcd
