// zookeeper/component.cpp -- the pglease::zookeeper component's registration:
// the zookeeper:// scheme (and zookeepers://, refused), registered with connect() by a static initializer
// when this object is linked in.
//
// As for pglease::redis (redis/component.cpp): nothing references this
// object, so pglease_zookeeper carries the link option
// -Wl,--undefined=pglease_zookeeper_component (CMake INTERFACE link option,
// pglease-zookeeper.pc Libs) that pulls it in from a static archive.
#include "detail/provider.hpp"
#include "zookeeper/component.hpp"

extern "C" {
/// The anchor named by --undefined; never called.
void pglease_zookeeper_component(void);
}

void
pglease_zookeeper_component(void)
{
}

namespace {

[[maybe_unused]] const bool zookeeper_registered =
    pglease::detail::register_provider("zookeeper", pglease::detail::connect_zookeeper);
// registered only to be refused saying why (no TLS in the C client: target.hpp)
[[maybe_unused]] const bool zookeepers_registered =
    pglease::detail::register_provider("zookeepers", pglease::detail::connect_zookeeper);

} // namespace
