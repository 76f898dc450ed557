// redis/component.cpp -- the pglease::redis component's registration: the
// redis://, rediss://, redlock://, redlocks:// and redis+sentinel:// schemes
// (rediss+sentinel:// too, to be refused with a reason rather than as an
// unknown scheme), registered with connect() by a static
// initializer when this object is linked in.
//
// Nothing references this object, so a linker taking pglease_redis from a
// static archive would leave it out and connect() would say "not linked in".
// pglease_redis therefore carries the link option
// -Wl,--undefined=pglease_redis_component (CMake INTERFACE link option,
// pglease-redis.pc Libs): the undefined symbol pulls this object in, and
// with it both providers.
#include "detail/provider.hpp"
#include "redis/component.hpp"

extern "C" {
/// The anchor named by --undefined; never called.
void pglease_redis_component(void);
}

void
pglease_redis_component(void)
{
}

namespace {

using pglease::detail::register_provider;

[[maybe_unused]] const bool redis_registered = register_provider("redis", pglease::detail::connect_redis) &&
                                               register_provider("rediss", pglease::detail::connect_redis);
[[maybe_unused]] const bool sentinel_registered =
    register_provider("redis+sentinel", pglease::detail::connect_redis);
[[maybe_unused]] const bool tls_sentinel_registered =
    register_provider("rediss+sentinel", pglease::detail::connect_redis);
[[maybe_unused]] const bool redlock_registered =
    register_provider("redlock", pglease::detail::connect_redlock) &&
    register_provider("redlocks", pglease::detail::connect_redlock);

} // namespace
