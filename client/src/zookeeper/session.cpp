// zookeeper/session.cpp -- a ZooKeeper session of the C client: connect,
// wait for events, close; and the mapping of the client's return codes to
// pglease errors.
#include "zookeeper/session.hpp"

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

} // namespace

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
Session::open(const std::string &hosts, milliseconds ttl, milliseconds connect_timeout) noexcept
{
	try {
		silence_client_log();
		std::unique_ptr<Session> s{new Session(hosts)};
		auto until = Clock::now() + connect_timeout;
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
			             "zookeeper " + hosts + ": no session within " + format_duration(connect_timeout)};
		return s;
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
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
	if (zh)
		(void)zookeeper_close(zh); // joins the client's threads: no callback after this
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
	return cv_.wait_until(lk, until, [&] { return generation_ != seen; });
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

Result<std::vector<std::string>>
children_of(Session &session, const std::string &path)
{
	String_vector names{0, nullptr};
	int rc = zoo_get_children(session.handle(), path.c_str(), 0, &names);
	if (rc != ZOK)
		return error_of(rc, session.hosts(), "get_children " + path);
	std::vector<std::string> out;
	try {
		for (int i = 0; i < names.count; i++)
			out.emplace_back(names.data[i]);
	} catch (...) {
		deallocate_String_vector(&names);
		throw;
	}
	deallocate_String_vector(&names);
	return out;
}

} // namespace pglease::detail::zookeeper
