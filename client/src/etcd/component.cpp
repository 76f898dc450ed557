// etcd/component.cpp -- the pglease::etcd component's registration: the
// etcd:// and etcds:// schemes, registered with connect() by a static initializer when this
// object is linked in.
//
// Nothing references this object, so a linker taking pglease_etcd from a
// static archive would leave it out: pglease_etcd carries the link option
// -Wl,--undefined=pglease_etcd_component (CMake INTERFACE link option,
// pglease-etcd.pc Libs), as pglease_redis does.
#include "detail/provider.hpp"
#include "etcd/component.hpp"

extern "C" {
/// The anchor named by --undefined; never called.
void pglease_etcd_component(void);
}

void
pglease_etcd_component(void)
{
}

namespace {

[[maybe_unused]] const bool etcd_registered =
    pglease::detail::register_provider("etcd", pglease::detail::connect_etcd) &&
    pglease::detail::register_provider("etcds", pglease::detail::connect_etcd);

} // namespace
