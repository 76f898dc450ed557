// zookeeper/session.cpp -- a ZooKeeper session of the C client: connect,
// wait for events, asynchronous requests waited for until a deadline, close;
// and the mapping of the client's return codes to pglease errors.
#include "zookeeper/session.hpp"

#include <thread>

namespace pglease::detail::zookeeper {

namespace {

// The C client logs to stderr by default; a library must not.  The level is
// process-wide (zoo_set_debug_level), set once before the first handle.
void
silence_client_log() noexcept
{
	static const bool silenced = [] {
		zoo_set_debug_level(static_cast<ZooLogLevel>(0));
		return true;
	}();
	(void)silenced;
}

// one_hour_at_most -- a condition variable's wait is cut into waits of an
// hour at most, so a deadline of Clock::time_point::max() (a wait of
// milliseconds::max()) never reaches the clock conversions of wait_until
Clock::time_point
one_hour_at_most(Clock::time_point until) noexcept
{
	auto now = Clock::now();
	return until - now > std::chrono::hours{1} ? now + std::chrono::hours{1} : until;
}

} // namespace

/// One request in flight: its completion fills answer and sets done.
struct Session::Call {
	std::mutex mu;
	std::condition_variable cv;
	bool done = false;
	Answer answer;
	// a multi's results and created paths: the client fills them when the
	// reply comes, so they live as long as the Call (abandoned ones too)
	std::vector<zoo_op_result_t> results;
	std::vector<std::vector<char>> paths;
	Stat set_stat{}; // a setData op's Stat (a multi has one at most)
};

namespace {

// answered -- an Answer without data: the client's or the server's rc
Answer
answered(int rc) noexcept
{
	Answer a;
	a.answered = true;
	a.rc = rc;
	return a;
}

// finish -- a completion's common end; fill reads the reply (only on ZOK).
// The notify is under the lock: the waiter may free the Call once it sees done.
template <class Fill>
void
finish(const void *data, int rc, Fill fill) noexcept
{
	auto *call = static_cast<Session::Call *>(const_cast<void *>(data));
	std::lock_guard<std::mutex> lk(call->mu);
	call->answer.answered = true;
	call->answer.rc = rc;
	if (rc == ZOK) {
		try {
			fill(call->answer);
		} catch (...) {
			call->answer.rc = ZSYSTEMERROR; // out of memory
		}
	}
	call->done = true;
	call->cv.notify_all();
}

void
stat_done(int rc, const Stat *stat, const void *data)
{
	finish(data, rc, [&](Answer &a) {
		if (stat)
			a.stat = *stat;
	});
}

void
created(int rc, const char *value, const Stat *stat, const void *data)
{
	finish(data, rc, [&](Answer &a) {
		if (value)
			a.path = value;
		if (stat)
			a.stat = *stat;
	});
}

void
data_done(int rc, const char *value, int value_len, const Stat *stat, const void *data)
{
	finish(data, rc, [&](Answer &a) {
		if (value && value_len > 0)
			a.data.assign(value, static_cast<std::size_t>(value_len));
		if (stat)
			a.stat = *stat;
	});
}

void
void_done(int rc, const void *data)
{
	finish(data, rc, [](Answer &) {});
}

void
multi_done(int rc, const void *data)
{
	finish(data, rc, [&](Answer &a) {
		auto *call = static_cast<const Session::Call *>(data);
		for (const auto &path : call->paths)
			if (!path.empty() && path[0] != '\0')
				a.names.emplace_back(path.data());
		a.stat = call->set_stat;
	});
}

void
acl_done(int rc, ACL_vector *acl, Stat *, const void *data)
{
	finish(data, rc, [&](Answer &a) {
		for (int i = 0; acl && i < acl->count; i++)
			a.acl.emplace_back(acl->data[i].perms,
			                   std::string{acl->data[i].id.scheme} + ":" + acl->data[i].id.id);
	});
}

void
strings_done(int rc, const String_vector *names, const void *data)
{
	finish(data, rc, [&](Answer &a) {
		for (int i = 0; names && i < names->count; i++)
			a.names.emplace_back(names->data[i]);
	});
}

} // namespace

const ACL_vector &
creator_read_acl() noexcept
{
	// the C structs take char *; the client only reads them
	static char auth[] = "auth", empty[] = "", world[] = "world", anyone[] = "anyone";
	static ACL entries[] = {{ZOO_PERM_ALL, {auth, empty}}, {ZOO_PERM_READ, {world, anyone}}};
	static ACL_vector acl{2, entries};
	return acl;
}

Error
unanswered(const std::string &hosts, const std::string &what, milliseconds bound)
{
	return Error{Errc::unavailable, "",
	             "zookeeper " + hosts + ": no answer to " + what + " within " + format_duration(bound) +
	                 " (the server is frozen, overloaded or cut off)"};
}

Error
error_of(int rc, const std::string &hosts, const std::string &what)
{
	std::string message = "zookeeper " + hosts + ": " + what + ": " + zerror(rc);
	switch (rc) {
	case ZCONNECTIONLOSS:
	case ZOPERATIONTIMEOUT:
	case ZSESSIONEXPIRED:
	case ZSESSIONMOVED:
	case ZINVALIDSTATE:
	case ZCLOSING:
	case ZNOTHING:
	case ZNOTREADONLY:
		return Error{Errc::unavailable, "", message};
	case ZNOAUTH:
		return Error{Errc::permission, "",
		             message + " (the node's ACL does not let this client's identity do that: a wrong "
		                       "password or user name in the URL, no credentials, or a node made by another "
		                       "identity)"};
	case ZAUTHFAILED:
		return Error{Errc::permission, "", message};
	case ZBADARGUMENTS:
	case ZINVALIDACL:
	case ZNOCHILDRENFOREPHEMERALS:
		return Error{Errc::invalid_argument, "", message};
	default:
		return Error{Errc::internal, "", message};
	}
}

Result<std::unique_ptr<Session>>
Session::open(const std::string &hosts, milliseconds ttl, Clock::time_point until,
              const std::string &auth) noexcept
{
	try {
		silence_client_log();
		std::unique_ptr<Session> s{new Session(hosts)};
		auto bound = std::chrono::ceil<milliseconds>(until - Clock::now()); // for the message
		{
			// hold mu_ so an early event waits until zh_ is set
			std::lock_guard<std::mutex> lk(s->mu_);
			s->zh_ = zookeeper_init(hosts.c_str(), &Session::on_event, static_cast<int>(ttl.count()), nullptr,
			                        s.get(), 0);
		}
		if (!s->zh_)
			return Error{Errc::unavailable, "", "zookeeper " + hosts + ": zookeeper_init failed"};
		if (!s->wait_connected(until))
			return Error{Errc::unavailable, "",
			             "zookeeper " + hosts + ": no session within " + format_duration(bound)};
		if (!auth.empty()) {
			if (auto done = s->authenticate(auth, until); !done)
				return done.error();
		}
		return s;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

// authenticate -- zoo_add_auth with the digest scheme, its verdict waited
// for.  Messages name the user, never the password.
Result<void>
Session::authenticate(const std::string &auth, Clock::time_point until) noexcept
{
	const std::string user = auth.substr(0, auth.find(':'));
	const std::string what = "digest authentication as \"" + user + "\"";
	auto bound = std::chrono::ceil<milliseconds>(until - Clock::now());
	Answer a = run(until, [&](zhandle_t *zh, Call *call) {
		return zoo_add_auth(zh, "digest", auth.data(), static_cast<int>(auth.size()), &void_done, call);
	});
	if (!a.answered)
		return unanswered(hosts_, what, bound);
	if (a.rc == ZAUTHFAILED || (a.rc == ZINVALIDSTATE && zh_ && zoo_state(zh_) == ZOO_AUTH_FAILED_STATE))
		return Error{Errc::permission, "",
		             "zookeeper " + hosts_ + ": " + what +
		                 " refused: wrong user name or password (the server ends the connection)"};
	if (a.rc != ZOK)
		return error_of(a.rc, hosts_, what);
	authenticated_ = true;
	return {};
}

void
Session::dispose(std::unique_ptr<Session> session) noexcept
{
	if (!session)
		return;
	try {
		std::thread([s = std::move(session)]() mutable { s.reset(); }).detach();
	} catch (...) {
		session.reset(); // no thread: close here, waiting
	}
}

void
Session::close() noexcept
{
	zhandle_t *zh = nullptr;
	{
		std::lock_guard<std::mutex> lk(mu_);
		zh = zh_;
		zh_ = nullptr;
		++generation_;
	}
	cv_.notify_all();
	if (!zh)
		return;
	(void)zookeeper_close(zh); // joins the client's threads: no callback after this
	std::unordered_map<Call *, std::shared_ptr<Call>> abandoned;
	{
		std::lock_guard<std::mutex> lk(mu_);
		abandoned.swap(calls_);
	}
}

bool
Session::closed() noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	return zh_ == nullptr;
}

bool
Session::connected() noexcept
{
	return zh_ && zoo_state(zh_) == ZOO_CONNECTED_STATE;
}

bool
Session::expired() noexcept
{
	if (!zh_)
		return true;
	int state = zoo_state(zh_);
	return state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

milliseconds
Session::negotiated() noexcept
{
	return milliseconds{zh_ ? zoo_recv_timeout(zh_) : 0};
}

std::int64_t
Session::id() noexcept
{
	const clientid_t *client = zh_ ? zoo_client_id(zh_) : nullptr;
	return client ? client->client_id : 0;
}

std::uint64_t
Session::generation() noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	return generation_;
}

bool
Session::wait_event(std::uint64_t seen, Clock::time_point until) noexcept
{
	std::unique_lock<std::mutex> lk(mu_);
	while (generation_ == seen) {
		if (Clock::now() >= until)
			return false;
		cv_.wait_until(lk, one_hour_at_most(until));
	}
	return true;
}

bool
Session::wait_connected(Clock::time_point until) noexcept
{
	for (;;) {
		auto seen = generation();
		if (connected())
			return true;
		if (expired() || Clock::now() >= until)
			return false;
		// the state can change without an event reaching us (a closed
		// handle); look again at least every 50 ms
		(void)wait_event(seen, std::min(until, Clock::now() + milliseconds{50}));
	}
}

void
Session::on_event(zhandle_t *, int, int, const char *, void *context) noexcept
{
	auto *s = static_cast<Session *>(context);
	if (!s)
		return;
	{
		std::lock_guard<std::mutex> lk(s->mu_);
		++s->generation_;
	}
	s->cv_.notify_all();
}

// send -- start one request (start(handle, completion data) returns the
// client's rc); its answer is waited for by await
template <class Start>
Session::Pending
Session::send(Start start) noexcept
{
	Pending p;
	try {
		p.call = std::make_shared<Call>();
		std::lock_guard<std::mutex> lk(mu_);
		if (!zh_) {
			p.rc = ZCLOSING;
			return p;
		}
		calls_.emplace(p.call.get(), p.call);
	} catch (...) {
		p.rc = ZSYSTEMERROR;
		return p;
	}
	p.rc = start(zh_, p.call.get());
	return p;
}

Answer
Session::await(Pending &p, Clock::time_point until) noexcept
{
	if (!p.call || p.rc != ZOK) // not sent; the Call stays in calls_ in case it was queued anyway
		return answered(p.rc);
	auto call = std::move(p.call);
	std::unique_lock<std::mutex> lk(call->mu);
	while (!call->done && Clock::now() < until)
		call->cv.wait_until(lk, one_hour_at_most(until));
	if (!call->done)
		return Answer{}; // abandoned: its completion runs later, or at close
	Answer answer = std::move(call->answer);
	lk.unlock();
	std::lock_guard<std::mutex> slk(mu_);
	calls_.erase(call.get());
	return answer;
}

// run -- one request, waited for until `until`
template <class Start>
Answer
Session::run(Clock::time_point until, Start start) noexcept
{
	auto p = send(start);
	return await(p, until);
}

Answer
Session::exists(const std::string &path, bool watch, Clock::time_point until) noexcept
{
	return run(until, [&](zhandle_t *zh, Call *call) {
		return zoo_awexists(zh, path.c_str(), watch ? &Session::on_event : nullptr, watch ? this : nullptr,
		                    &stat_done, call);
	});
}

Answer
Session::create(const std::string &path, std::string_view data, int mode, Clock::time_point until) noexcept
{
	auto p = send_create(path, data, mode);
	return await(p, until);
}

Session::Pending
Session::send_create(const std::string &path, std::string_view data, int mode) noexcept
{
	return send([&](zhandle_t *zh, Call *call) {
		return zoo_acreate2(zh, path.c_str(), data.empty() ? nullptr : data.data(),
		                    data.empty() ? -1 : static_cast<int>(data.size()),
		                    authenticated_ ? &creator_read_acl() : &ZOO_OPEN_ACL_UNSAFE, mode, &created,
		                    call);
	});
}

Answer
Session::remove(const std::string &path, Clock::time_point until) noexcept
{
	return run(until, [&](zhandle_t *zh, Call *call) {
		return zoo_adelete(zh, path.c_str(), -1, &void_done, call);
	});
}

Answer
Session::children(const std::string &path, Clock::time_point until, bool watch) noexcept
{
	return run(until, [&](zhandle_t *zh, Call *call) {
		return zoo_awget_children(zh, path.c_str(), watch ? &Session::on_event : nullptr,
		                          watch ? this : nullptr, &strings_done, call);
	});
}

Answer
Session::get_data(const std::string &path, bool watch, Clock::time_point until) noexcept
{
	return run(until, [&](zhandle_t *zh, Call *call) {
		return zoo_awget(zh, path.c_str(), watch ? &Session::on_event : nullptr, watch ? this : nullptr,
		                 &data_done, call);
	});
}

Answer
Session::set_data(const std::string &path, std::string_view data, int version,
                  Clock::time_point until) noexcept
{
	return run(until, [&](zhandle_t *zh, Call *call) {
		return zoo_aset(zh, path.c_str(), data.data(), static_cast<int>(data.size()), version, &stat_done,
		                call);
	});
}

Answer
Session::multi(const std::vector<Op> &ops, Clock::time_point until) noexcept
{
	return run(until, [&](zhandle_t *zh, Call *call) -> int {
		try {
			return start_multi(zh, call, ops);
		} catch (...) {
			return ZSYSTEMERROR; // out of memory: nothing sent
		}
	});
}

// start_multi -- zoo_amulti of ops; the request is serialized at once, only
// the results and the created paths (kept in the Call) are written later
int
Session::start_multi(zhandle_t *zh, Call *call, const std::vector<Op> &ops)
{
	const ACL_vector *acl = authenticated_ ? &creator_read_acl() : &ZOO_OPEN_ACL_UNSAFE;
	std::vector<zoo_op_t> zops(ops.size());
	call->results.assign(ops.size(), zoo_op_result_t{});
	call->paths.assign(ops.size(), {});
	for (std::size_t i = 0; i < ops.size(); i++) {
		const Op &op = ops[i];
		if (op.set) {
			zoo_set_op_init(&zops[i], op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()), -1,
			                &call->set_stat);
		} else if (op.create) {
			// a sequential node's path: the given one and 10 digits
			call->paths[i].assign(op.path.size() + 16, '\0');
			zoo_create_op_init(&zops[i], op.path.c_str(), op.data.empty() ? nullptr : op.data.data(),
			                   op.data.empty() ? -1 : static_cast<int>(op.data.size()), acl, op.mode,
			                   call->paths[i].data(), static_cast<int>(call->paths[i].size()));
		} else {
			zoo_delete_op_init(&zops[i], op.path.c_str(), -1);
		}
	}
	return zoo_amulti(zh, static_cast<int>(zops.size()), zops.data(), call->results.data(), &multi_done,
	                  call);
}

Answer
Session::get_acl(const std::string &path, Clock::time_point until) noexcept
{
	return run(until,
	           [&](zhandle_t *zh, Call *call) { return zoo_aget_acl(zh, path.c_str(), &acl_done, call); });
}

} // namespace pglease::detail::zookeeper
