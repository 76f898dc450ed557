// pglease/result.hpp -- Result<T>: a value or an Error, falsy on failure.
#pragma once

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "pglease/error.hpp"

namespace pglease {

template <class T> class [[nodiscard]] Result {
public:
	Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
	Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

	[[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
	explicit operator bool() const noexcept { return has_value(); }

	/// Precondition: has_value().
	[[nodiscard]] T &value() &noexcept
	{
		assert(has_value());
		return *std::get_if<0>(&v_);
	}
	[[nodiscard]] const T &value() const &noexcept
	{
		assert(has_value());
		return *std::get_if<0>(&v_);
	}
	[[nodiscard]] T &&value() &&noexcept
	{
		assert(has_value());
		return std::move(*std::get_if<0>(&v_));
	}
	T &operator*() &noexcept { return value(); }
	const T &operator*() const &noexcept { return value(); }
	T &&operator*() &&noexcept { return std::move(*this).value(); }
	T *operator->() noexcept { return &value(); }
	const T *operator->() const noexcept { return &value(); }

	/// Precondition: !has_value().
	[[nodiscard]] const Error &error() const noexcept
	{
		assert(!has_value());
		return *std::get_if<1>(&v_);
	}

private:
	std::variant<T, Error> v_;
};

template <> class [[nodiscard]] Result<void> {
public:
	Result() = default;
	Result(Error error) : error_(std::move(error)) {}

	[[nodiscard]] bool has_value() const noexcept { return !error_.has_value(); }
	explicit operator bool() const noexcept { return has_value(); }

	/// Precondition: !has_value().
	[[nodiscard]] const Error &error() const noexcept
	{
		assert(error_.has_value());
		return *error_;
	}

private:
	std::optional<Error> error_;
};

} // namespace pglease
