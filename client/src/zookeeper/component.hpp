// zookeeper/component.hpp -- the provider of the pglease::zookeeper component,
// as component.cpp registers it with connect(): zookeeper:// (locker.cpp).
#pragma once

#include <memory>
#include <string_view>

#include "pglease/locker.hpp"

namespace pglease::detail {

Result<std::unique_ptr<Locker>> connect_zookeeper(std::string_view url, const ClientOptions &options);

} // namespace pglease::detail
