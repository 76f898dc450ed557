// zookeeper/nodes.cpp -- what the recipes share (nodes.hpp): deadlines,
// sessions, folders and their owners, and protected lock nodes.
#include "zookeeper/nodes.hpp"

#include <algorithm>
#include <optional>
#include <random>

#include "detail/provider.hpp"

namespace pglease::detail::zookeeper {

namespace {

// protection_prefix -- "_c_<guid>-": the start of a name this acquire alone
// can have (its nodes' names add the recipe's: "lock-", "__READ__", ...)
std::string
protection_prefix()
{
	static thread_local std::mt19937_64 rng{
	    std::random_device{}() ^ static_cast<std::uint64_t>(Clock::now().time_since_epoch().count())};
	static const char hex[] = "0123456789abcdef";
	std::string guid;
	for (int i = 0; i < 32; i++)
		guid += hex[rng() & 15];
	return "_c_" + guid + "-";
}

// find_protected -- our nodes after a lost create reply, by their GUID
// prefix: every one of them, in the order of `recipes` (a multi creates
// all or none), or nothing
Result<std::optional<LockNode>>
find_protected(Session &s, const std::string &folder, const std::string &prefix,
               const std::vector<std::string> &recipes, const Bounds &b)
{
	auto listed = s.children(folder, b.until);
	if (!listed.answered || listed.rc != ZOK)
		return failure(listed, s.hosts(), "get_children " + folder, b.bound);
	LockNode found{prefix, {}, 0, 0};
	for (const auto &recipe : recipes)
		for (const auto &name : listed.names)
			if (name.compare(0, prefix.size() + recipe.size(), prefix + recipe) == 0)
				found.names.push_back(name);
	if (found.names.empty())
		return std::optional<LockNode>{};
	auto a = s.exists(folder + "/" + found.names.front(), false, b.until);
	if (!a.answered || a.rc != ZOK)
		return failure(a, s.hosts(), "exists " + folder + "/" + found.names.front(), b.bound);
	found.czxid = a.stat.czxid;
	found.version = a.stat.version;
	return std::optional<LockNode>{std::move(found)};
}

// create_once -- the EPHEMERAL|SEQUENTIAL nodes prefix + each of recipes
// (one: a create; two: a multi, consecutive sequence numbers), created
// once.  names: as created, without the folder.  A multi ends with a
// setData of the folder (its data stays empty): a create in a multi
// reports no Stat, the setData's tells the transaction's zxid (mzxid: our
// nodes' czxid, the token) and the folder's children after it
// (numChildren: ours alone, first).  The folder is never created in the
// multi: the C client (3.8) misreads the reply of a multi that creates a
// container (seen: the results after it empty, or an assertion failure in
// deserialize_multi).
Answer
create_once(Session &s, const std::string &folder, const std::string &prefix,
            const std::vector<std::string> &recipes, std::string_view data, const Bounds &b)
{
	if (recipes.size() == 1) {
		auto a = s.create(folder + "/" + prefix + recipes.front(), data, ZOO_EPHEMERAL_SEQUENTIAL, b.until);
		if (a.answered && a.rc == ZOK)
			a.names.push_back(a.path.substr(a.path.rfind('/') + 1));
		return a;
	}
	std::vector<Session::Op> ops;
	for (const auto &recipe : recipes)
		ops.push_back(
		    Session::Op{true, folder + "/" + prefix + recipe, std::string{data}, ZOO_EPHEMERAL_SEQUENTIAL});
	ops.push_back(Session::Op{false, folder, {}, 0, true});
	auto a = s.multi(ops, b.until);
	if (!a.answered || a.rc != ZOK)
		return a;
	for (auto &name : a.names)
		name = name.substr(name.rfind('/') + 1);
	a.stat.czxid = a.stat.mzxid; // the multi's zxid
	a.stat.version = 0;          // of our nodes' data, as created
	return a;
}

} // namespace

Bounds
bounds_of(const Context &ctx, const LeaseOptions &options)
{
	const auto start = Clock::now();
	const auto bound = saturating_add(options.wait, ctx.options.statement_grace);
	const auto give_up = deadline_after(start, options.wait);
	return Bounds{give_up, deadline_after(start, bound), bound, give_up};
}

bool
retryable(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

Error
failure(const Answer &a, const std::string &hosts, const std::string &what, milliseconds bound)
{
	return a.answered ? error_of(a.rc, hosts, what) : unanswered(hosts, what, bound);
}

Error
mismatch(std::string_view resource, const std::string &why)
{
	return Error{Errc::invalid_argument, "LS003", "lease \"" + std::string{resource} + "\": " + why};
}

Error
timed_out(std::string_view resource, const LeaseOptions &options)
{
	return Error{Errc::timeout, "",
	             "lease \"" + std::string{resource} + "\" not granted within " +
	                 format_duration(options.wait)};
}

Result<std::unique_ptr<Session>>
open_session(const Context &ctx, milliseconds ttl, const Bounds &b)
{
	if (auto pooled = ctx.pool->take(ttl))
		return pooled;
	auto setup = std::min(b.until, deadline_after(Clock::now(), ctx.options.connect_timeout));
	auto opened = Session::open(ctx.target.hosts, ttl, setup, ctx.target.auth);
	if (!opened)
		return opened.error();
	auto s = std::move(*opened);
	if (s->negotiated() < ttl) {
		// the server clamps into [minSessionTimeout, maxSessionTimeout]: less
		// than asked is its maximum
		auto most = s->negotiated();
		Session::dispose(std::move(s));
		return Error{Errc::invalid_argument, "22023",
		             "zookeeper " + ctx.target.hosts + ": ttl " + format_duration(ttl) +
		                 " is longer than the servers grant: their sessions last at most " +
		                 format_duration(most) +
		                 " (maxSessionTimeout, by default 20 x tickTime); ask for a ttl of at most that"};
	}
	return s;
}

Result<void>
ensure_folder(Session &s, const Target &target, const std::string &folder, const Bounds &b)
{
	auto a = s.create(folder, {}, ZOO_CONTAINER, b.until);
	if (a.answered && (a.rc == ZOK || a.rc == ZNODEEXISTS))
		return {};
	if (!a.answered || a.rc != ZNONODE)
		return failure(a, s.hosts(), "create " + folder, b.bound);
	for (auto at = folder.find('/', 1); at != std::string::npos; at = folder.find('/', at + 1)) {
		std::string ancestor = folder.substr(0, at);
		// a semaphore's <root>/<resource> above its "locks" and "leases"
		// is a container too; the root and <root>/.election persist
		const bool resource_folder =
		    ancestor.size() > target.root.size() && ancestor != target.root + "/.election";
		a = s.create(ancestor, {}, resource_folder ? ZOO_CONTAINER : ZOO_PERSISTENT, b.until);
		if (!a.answered || (a.rc != ZOK && a.rc != ZNODEEXISTS))
			return failure(a, s.hosts(), "create " + ancestor, b.bound);
	}
	a = s.create(folder, {}, ZOO_CONTAINER, b.until);
	if (!a.answered || (a.rc != ZOK && a.rc != ZNODEEXISTS))
		return failure(a, s.hosts(), "create " + folder, b.bound);
	return {};
}

// check_owned -- with credentials: the resource's folder (and an
// election's <root>/.election) and the root let
// no identity but this client's delete, create, write or re-ACL (READ
// only).  Our own lock node's ACL names our identity (the server expands
// the "auth" scheme into the ids the session authenticated as).  Checked
// after our node exists: a folder with a child cannot be deleted, and
// once its ACL is ours nobody else can change it, so the check holds for
// the whole lease.  A node made without credentials (world:anyone:cdrwa)
// or by another identity is refused with Errc::permission.
Result<void>
check_owned(Session &s, const Target &target, const std::string &folder, const std::string &node,
            const Bounds &b)
{
	auto mine = s.get_acl(node, b.until);
	if (!mine.answered || mine.rc != ZOK)
		return failure(mine, s.hosts(), "get_acl " + node, b.bound);
	std::vector<std::string> ours;
	for (const auto &entry : mine.acl)
		if (entry.first == ZOO_PERM_ALL)
			ours.push_back(entry.second);
	// an election's folder has one more ancestor of ours: <root>/.election
	std::vector<std::string> paths{folder, target.root};
	if (auto parent = folder.substr(0, folder.rfind('/')); parent != target.root)
		paths.insert(paths.begin() + 1, parent);
	for (const std::string &path : paths) {
		auto a = s.get_acl(path, b.until);
		if (!a.answered || a.rc != ZOK)
			return failure(a, s.hosts(), "get_acl " + path, b.bound);
		for (const auto &[perms, id] : a.acl) {
			if ((perms & ~ZOO_PERM_READ) == 0 || std::find(ours.begin(), ours.end(), id) != ours.end())
				continue;
			// "digest:user:hash": the hash stays out of the message
			auto shown = id.substr(0, id.find(':', id.find(':') + 1));
			return Error{Errc::permission, "",
			             "zookeeper " + s.hosts() + ": " + path + " lets " + shown +
			                 " change it or delete its children, not only \"" + target.user +
			                 "\": a lease under it could be broken or blocked by others (made without "
			                 "credentials or by another identity?); with no lease held, delete it "
			                 "(zkCli deleteall), or setAcl it to auth::cdrwa,world:anyone:r as \"" +
			                 target.user + "\", or use another chroot"};
		}
	}
	return {};
}

// create_lock_node -- our nodes (Curator's protection: a create whose
// reply was lost is found again after the reconnect by the GUID in its
// name, never created twice)
Result<LockNode>
create_lock_node(Session &s, const Target &target, const std::string &folder,
                 const std::vector<std::string> &recipes, std::string_view data, const Bounds &b,
                 FolderHints *folders)
{
	const std::string prefix = protection_prefix();
	const std::string what = "create " + folder + "/" + prefix + recipes.front();
	Error last{Errc::unavailable, "", "zookeeper " + s.hosts() + ": could not create the lock node"};
	const bool multi = recipes.size() > 1 && folders;
	for (int attempt = 0; attempt < 4; attempt++) {
		// a new resource, as a rule: its folder's create sent just before
		// the multi (pipelined: answered first, one round trip for both);
		// ZNODEEXISTS if it is there after all, ZNONODE for the multi too
		// if the root is missing (ensure_folder below)
		Session::Pending ahead;
		const bool make_folder = attempt == 0 && multi && !folders->exists(folder);
		if (make_folder)
			ahead = s.send_create(folder, {}, ZOO_CONTAINER);
		auto a = create_once(s, folder, prefix, recipes, data, b);
		if (make_folder) {
			auto made = s.await(ahead, b.until);
			if (made.answered && (made.rc == ZOK || made.rc == ZNODEEXISTS))
				folders->seen(folder, true);
		}
		if (a.answered && a.rc == ZOK) {
			LockNode node{prefix, std::move(a.names), a.stat.czxid, a.stat.version};
			// only our nodes in the folder after our transaction: first
			node.alone = multi && a.stat.numChildren == static_cast<std::int32_t>(node.names.size());
			return node;
		}
		last = failure(a, s.hosts(), what, b.bound);
		if (!a.answered) // it may still be created: the caller's dispose ends it
			return last;
		if (a.rc == ZNONODE) { // the empty container was reaped meanwhile
			if (auto made = ensure_folder(s, target, folder, b); !made)
				return made.error();
			continue;
		}
		if (!retryable(a.rc))
			return last;
		// the reply was lost: the nodes may exist; find them after the reconnect
		if (!s.wait_connected(b.until))
			return last;
		auto found = find_protected(s, folder, prefix, recipes, b);
		if (!found)
			return found.error();
		if (*found)
			return std::move(**found);
	}
	return last;
}

bool
FolderHints::exists(const std::string &folder)
{
	std::lock_guard<std::mutex> lk(mu_);
	return seen_.count(folder) != 0;
}

void
FolderHints::seen(const std::string &folder, bool exists) noexcept
{
	try {
		std::lock_guard<std::mutex> lk(mu_);
		if (!exists) {
			seen_.erase(folder);
			return;
		}
		if (seen_.size() >= most)
			seen_.clear(); // a hint only: forgetting costs one request
		seen_.insert(folder);
	} catch (...) {
	}
}

Answer
remove_nodes(Session &s, const std::vector<std::string> &paths, Clock::time_point until) noexcept
{
	if (paths.size() == 1)
		return s.remove(paths.front(), until);
	try {
		std::vector<Session::Op> ops;
		for (const auto &path : paths)
			ops.push_back(Session::Op{false, path, {}, 0});
		return s.multi(ops, until);
	} catch (...) {
		Answer a;
		a.answered = true;
		a.rc = ZSYSTEMERROR;
		return a;
	}
}

std::vector<std::string>
paths_of(const std::string &folder, const LockNode &node)
{
	std::vector<std::string> paths;
	for (const auto &name : node.names)
		paths.push_back(folder + "/" + name);
	return paths;
}

} // namespace pglease::detail::zookeeper
