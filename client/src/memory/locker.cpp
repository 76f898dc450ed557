// memory/locker.cpp -- the memory: provider: leases in this process only.
//
// For tests and single-instance services (the decision tree's "in-memory:
// single instance only, NOT distributed").  Every memory: locker of a
// process shares the unnamed lock space, as every client of one Redis
// shares its keys; memory:NAME is a space of its own (memory/space.cpp).
// Tokens come from the space's process-local counter: monotonic while the
// process lives, gone with it.
#include "detail/provider.hpp"
#include "memory/space.hpp"

namespace pglease::detail {

namespace {

// MemoryGrant -- one grant of a lock space
class MemoryGrant final : public Grant {
public:
	MemoryGrant(std::shared_ptr<memory::LockSpace> space, std::string resource, std::int64_t token)
	    : space_(std::move(space)), resource_(std::move(resource)), token_(token)
	{
	}
	Result<bool> renew(milliseconds ttl) noexcept override { return space_->renew(resource_, token_, ttl); }
	Result<bool> release() noexcept override { return space_->release(resource_, token_); }
	Result<bool> proclaim(std::string_view value) noexcept override
	{
		return space_->proclaim(resource_, token_, value);
	}

private:
	std::shared_ptr<memory::LockSpace> space_;
	std::string resource_;
	std::int64_t token_;
};

class MemoryLocker final : public LockerBase {
public:
	explicit MemoryLocker(std::shared_ptr<memory::LockSpace> space) noexcept : space_(std::move(space)) {}

	Capabilities capabilities() const noexcept override
	{
		Capabilities c;
		c.fencing_token = true; // within the process
		c.fifo_wait = true;
		c.election = true;
		c.shared_mode = true;
		c.semaphore = true;
		c.reclaim = true; // the space gives a holder asking again its grant
		return c;
	}
	std::string_view provider() const noexcept override { return "in-memory"; }

protected:
	Result<Granted> grant(std::string_view resource, const LeaseOptions &options, const std::string &holder,
	                      milliseconds) noexcept override
	{
		return take(resource, options,
		            [&] {
			            return space_->acquire(resource, holder, memory::Sharing{options.mode, options.limit},
			                                   options.ttl, options.wait);
		            });
	}
	Result<Granted> grant_leadership(std::string_view election, std::string_view value,
	                                 const LeaseOptions &options, const std::string &holder,
	                                 milliseconds) noexcept override
	{
		return take(election, options,
		            [&] { return space_->campaign(election, holder, value, options.ttl, options.wait); });
	}
	Result<LeaderView> read_leader(std::string_view election) noexcept override
	{
		return space_->leader(election);
	}
	Result<LeaderView> next_leader(std::string_view election, const LeaderView &seen,
	                               Clock::time_point deadline) noexcept override
	{
		return space_->next_leader(election, seen, deadline);
	}

private:
	// take -- a grant from the space by `call` (acquire or campaign)
	template <class Call>
	Result<Granted> take(std::string_view resource, const LeaseOptions &options, Call call) noexcept
	{
		auto sent = Clock::now();
		Result<std::int64_t> token = call();
		if (!token)
			return token.error();
		try {
			Granted g;
			g.token = *token;
			g.deadline = deadline_after(sent, options.ttl);
			g.grant = std::make_unique<MemoryGrant>(space_, std::string{resource}, *token);
			return g;
		} catch (...) {
			(void)space_->release(resource, *token);
			return Error{Errc::internal, "", "out of memory"};
		}
	}

	std::shared_ptr<memory::LockSpace> space_;
};

} // namespace

Result<std::unique_ptr<Locker>>
connect_memory(std::string_view name, const ClientOptions &) noexcept
{
	try {
		return handed_out(std::make_unique<MemoryLocker>(memory::lock_space(name)));
	} catch (...) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

} // namespace pglease::detail
