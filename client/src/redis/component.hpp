// redis/component.hpp -- the providers of the pglease::redis component, as
// component.cpp registers them with connect(): redis:// (redis/locker.cpp)
// and redlock:// (redlock/locker.cpp).
#pragma once

#include <memory>
#include <string_view>

#include "pglease/locker.hpp"

namespace pglease::detail {

Result<std::unique_ptr<Locker>> connect_redis(std::string_view url, const ClientOptions &options);
Result<std::unique_ptr<Locker>> connect_redlock(std::string_view url, const ClientOptions &options);

} // namespace pglease::detail
