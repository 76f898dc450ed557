// lease.cpp -- the Lease guard every provider returns: its accessors, and
// renew, release, on_lost and detach through the lease engine
// (detail/engine.cpp).
#include "detail/provider.hpp"

namespace pglease {

using detail::Clock;

Lease::Lease(std::shared_ptr<detail::LeaseEngine> engine, std::shared_ptr<detail::LeaseState> state) noexcept
    : engine_(std::move(engine)), state_(std::move(state))
{
}

Lease::Lease(Lease &&) noexcept = default;

Lease &
Lease::operator=(Lease &&other) noexcept
{
	if (this != &other) {
		if (state_ && engine_)
			(void)engine_->release(*state_);
		engine_ = std::move(other.engine_);
		state_ = std::move(other.state_);
	}
	return *this;
}

Lease::~Lease()
{
	if (state_ && engine_)
		(void)engine_->release(*state_);
}

std::int64_t
Lease::token() const noexcept
{
	return state_ ? state_->token : 0;
}

const std::string &
Lease::resource() const noexcept
{
	static const std::string none;
	return state_ ? state_->resource : none;
}

const std::string &
Lease::holder() const noexcept
{
	static const std::string none;
	return state_ ? state_->holder : none;
}

bool
Lease::valid() const noexcept
{
	if (!state_)
		return false;
	std::lock_guard<std::mutex> lk(state_->mu);
	return !state_->lost && !state_->released && Clock::now() < state_->deadline;
}

std::chrono::milliseconds
Lease::remaining() const noexcept
{
	if (!valid())
		return std::chrono::milliseconds{0};
	std::lock_guard<std::mutex> lk(state_->mu);
	return std::chrono::duration_cast<std::chrono::milliseconds>(state_->deadline - Clock::now());
}

Result<void>
Lease::renew() noexcept
{
	if (!state_ || !engine_)
		return Error{Errc::lost, "", "empty lease"};
	return engine_->renew_now(*state_);
}

Result<void>
Lease::release() noexcept
{
	if (!state_ || !engine_)
		return Error{Errc::lost, "", "empty lease"};
	return engine_->release(*state_);
}

void
Lease::on_lost(std::function<void(const Error &)> callback) noexcept
{
	if (!state_)
		return;
	bool already = false;
	{
		std::lock_guard<std::mutex> lk(state_->mu);
		already = state_->lost;
		if (!already)
			state_->on_lost = callback;
	}
	if (already && callback) {
		try {
			callback(Error{Errc::lost, "", "lease \"" + state_->resource + "\" was already lost"});
		} catch (...) {
		}
	}
}

std::int64_t
Lease::detach() noexcept
{
	std::int64_t token = this->token();
	bool provisional = false;
	if (state_) {
		std::lock_guard<std::mutex> lk(state_->mu);
		provisional = state_->provisional;
	}
	if (provisional && engine_) // held for less than its TTL: extended first (Granted::provisional)
		(void)engine_->renew_now(*state_);
	if (state_) {
		std::lock_guard<std::mutex> lk(state_->mu);
		state_->released = true; // stops renewal; nothing is sent
	}
	state_.reset();
	engine_.reset();
	return token;
}

CancelToken
Lease::cancel_token() const noexcept
{
	return state_ ? CancelToken{state_->cancelled} : CancelToken{};
}

} // namespace pglease
