// etcd/component.hpp -- the provider of the pglease::etcd component, as
// component.cpp registers it with connect(): etcd:// and etcds:// (etcd/locker.cpp).
#pragma once

#include <memory>
#include <string_view>

#include "pglease/locker.hpp"

namespace pglease::detail {

Result<std::unique_ptr<Locker>> connect_etcd(std::string_view url, const ClientOptions &options);

} // namespace pglease::detail
