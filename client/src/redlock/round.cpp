// redlock/round.cpp -- a Redlock round over every node from one thread
// (round.hpp): write to all, then poll(2) all their sockets.
#include "redlock/round.hpp"

#include <poll.h>

#include <cerrno>
#include <optional>

#include "detail/provider.hpp"

namespace pglease::detail::redlock {

namespace {

using Answer = std::optional<Result<Reply>>; // nullopt: not heard yet

// count -- one node's answer into the votes
void
count(Votes &v, const Result<Reply> &reply, const redis::Endpoint &endpoint)
{
	if (reply && reply->is_integer()) {
		(reply->integer == 1 ? v.yes : v.no)++;
		return;
	}
	Error error;
	if (!reply)
		error = reply.error();
	else if (reply->is_error())
		error = redis::error_from_reply(*reply, endpoint);
	else
		error = Error{Errc::internal, "", "redis " + to_string(endpoint) + ": no integer"};
	if (error.code == Errc::permission)
		v.refused++;
	v.errors += (v.errors.empty() ? "" : "; ") + error.message;
}

// said_yes -- an answer that is a vote for
bool
said_yes(const Answer &a)
{
	return a && *a && (*a)->is_integer() && (*a)->integer == 1;
}

// gather -- poll the nodes not heard yet and read what came, until enough
// said yes (true), all answered, or deadline.  Past the deadline one last
// poll that does not wait: replies that came in time are taken even when
// this thread ran late.
bool
gather(std::vector<Link> &links, std::vector<Answer> &answers, std::size_t enough, Deadline deadline)
{
	std::size_t yes = 0;
	for (const auto &a : answers)
		yes += said_yes(a) ? 1 : 0;
	std::vector<pollfd> fds;
	std::vector<std::size_t> which;
	for (;;) {
		if (yes >= enough)
			return true;
		fds.clear();
		which.clear();
		for (std::size_t i = 0; i < links.size(); i++)
			if (!answers[i]) {
				fds.push_back(pollfd{links[i].fd(), links[i].events(), 0});
				which.push_back(i);
			}
		if (fds.empty())
			return false;
		auto left = std::max<long long>(std::chrono::ceil<milliseconds>(deadline - Clock::now()).count(), 0);
		int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 1 << 30)));
		if (ready < 0 && errno != EINTR)
			return false;
		for (std::size_t k = 0; k < fds.size() && ready > 0; k++) {
			if (fds[k].revents == 0)
				continue;
			auto got = links[which[k]].receive(deadline);
			if (!got)
				answers[which[k]] = Result<Reply>{got.error()};
			else if (*got)
				answers[which[k]] = Result<Reply>{std::move(**got)};
			yes += said_yes(answers[which[k]]) ? 1 : 0;
		}
		if (left == 0)
			return yes >= enough;
	}
}

} // namespace

Cluster::Cluster(std::vector<std::shared_ptr<Node>> nodes, std::size_t max_idle)
    : nodes_(std::move(nodes)), max_idle_(max_idle)
{
}

std::unique_ptr<Cluster::Links>
Cluster::borrow()
{
	{
		std::lock_guard<std::mutex> lk(mu_);
		if (!idle_.empty()) {
			auto links = std::move(idle_.back());
			idle_.pop_back();
			return links;
		}
	}
	auto links = std::make_unique<Links>();
	links->reserve(nodes_.size());
	for (const auto &node : nodes_)
		links->emplace_back(node);
	return links;
}

void
Cluster::give_back(std::unique_ptr<Links> links) noexcept
{
	std::lock_guard<std::mutex> lk(mu_);
	if (idle_.size() < max_idle_) {
		try {
			idle_.push_back(std::move(links));
		} catch (...) {
			// dropped: the next round opens others
		}
	}
}

Votes
Cluster::ask(const Script &script, std::string_view key, const std::vector<std::string_view> &args,
             milliseconds timeout, std::size_t enough)
{
	auto links = borrow();
	const Deadline deadline = deadline_after(Clock::now(), timeout);
	std::vector<Answer> answers(links->size());
	for (std::size_t i = 0; i < links->size(); i++)
		if (auto sent = (*links)[i].send(script, key, args, deadline); !sent)
			answers[i] = Result<Reply>{sent.error()};
	// a round a majority ended leaves the others' replies to the next one;
	// one the deadline ended, or every node's failure, ends them
	const bool late = !gather(*links, answers, enough, deadline);
	Votes v;
	for (std::size_t i = 0; i < links->size(); i++) {
		if (answers[i]) {
			count(v, *answers[i], (*links)[i].endpoint());
			continue;
		}
		const std::string what = (*links)[i].handshaking()
		                             ? "no TLS handshake within " + std::to_string(timeout.count()) +
		                                   " ms (is this port a TLS port of Redis?)"
		                             : "no reply within " + std::to_string(timeout.count()) + " ms";
		(*links)[i].abandon(late); // early: its reply is read at the next round
		if (late)
			count(v, Error{Errc::unavailable, "", "redis " + to_string((*links)[i].endpoint()) + ": " + what},
			      (*links)[i].endpoint());
	}
	give_back(std::move(links));
	return v;
}

} // namespace pglease::detail::redlock
