// connect.cpp -- pglease::connect(url): the URL's scheme picks the provider.
//
// PostgreSQL (postgres/) and memory are part of the core library.  The
// other providers are components (pglease::redis, ...) with libraries of
// their own: a component registers its schemes from a static initializer
// when it is linked in, so a service that links only the core pulls in no
// provider library, and is told which component to link when it asks for
// one it does not have.
#include <map>
#include <mutex>
#include <string>

#include "detail/provider.hpp"

namespace pglease {
namespace detail {

namespace {

struct Registry {
	std::mutex mu;
	std::map<std::string, ProviderFactory, std::less<>> factories;
};

Registry &
registry()
{
	static Registry r; // constructed on first use, before any component registers
	return r;
}

// The component that serves a scheme, for the "not linked in" message.
std::string_view
component_of(std::string_view scheme) noexcept
{
	if (scheme == "redis" || scheme == "rediss" || scheme == "redlock" || scheme == "redlocks" ||
	    scheme == "redis+sentinel")
		return "redis";
	if (scheme == "etcd" || scheme == "etcds")
		return "etcd";
	if (scheme == "zookeeper")
		return "zookeeper";
	return {};
}

} // namespace

bool
register_provider(std::string_view scheme, ProviderFactory factory) noexcept
{
	try {
		Registry &r = registry();
		std::lock_guard<std::mutex> lk(r.mu);
		r.factories[std::string{scheme}] = factory;
		return true;
	} catch (...) {
		return false;
	}
}

// The providers of the core library (memory/locker.cpp, postgres/locker.cpp).
Result<std::unique_ptr<Locker>> connect_memory(std::string_view name, const ClientOptions &options) noexcept;
/// The PostgreSQL locker (postgres/locker.hpp) for a URL or libpq key=value string; a malformed one is
/// Errc::invalid_argument before any I/O (libpq's own parser).
Result<std::unique_ptr<Locker>> connect_postgres(std::string_view dsn, const ClientOptions &options) noexcept;

} // namespace detail

namespace {

Result<std::unique_ptr<Locker>> connect_unredacted(std::string_view url, const ClientOptions &options);

} // namespace

// connect -- every message it returns has the URL's password masked
Result<std::unique_ptr<Locker>>
connect(std::string_view url, ClientOptions options) noexcept
{
	try {
		Result<std::unique_ptr<Locker>> locker = connect_unredacted(url, options);
		if (!locker)
			return Error{locker.error().code, locker.error().sqlstate, redact(locker.error().message, url)};
		return locker;
	} catch (const std::exception &e) {
		return Error{Errc::internal, "", e.what()};
	} catch (...) {
		return Error{Errc::internal, "", "unknown exception"};
	}
}

namespace {

// connect_unredacted -- the URL's scheme picks the factory; may throw
Result<std::unique_ptr<Locker>>
connect_unredacted(std::string_view url, const ClientOptions &options)
{
	auto colon = url.find(':');
	auto scheme_end = url.find("://");
	bool keyvalue = scheme_end == std::string_view::npos && url.find('=') != std::string_view::npos;
	if (url.empty() || keyvalue || url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
		return detail::connect_postgres(url, options);
	if (url.rfind("memory:", 0) == 0)
		return detail::connect_memory(url.substr(7), options);
	if (scheme_end == std::string_view::npos || colon != scheme_end || scheme_end == 0)
		return Error{Errc::invalid_argument, "",
		             // the DSN is not quoted: unparsed, its password could not be masked
		             "cannot tell the provider of the DSN (no scheme:// and not key=value): "
		                 "expected postgresql://..., a libpq key=value string, redis://host:port, "
		                 "redlock://h1:p1,h2:p2,h3:p3, etcd://h:p, zookeeper://h:p or memory:"};
	std::string_view scheme = url.substr(0, scheme_end);
	detail::ProviderFactory factory = nullptr;
	{
		detail::Registry &r = detail::registry();
		std::lock_guard<std::mutex> lk(r.mu);
		auto it = r.factories.find(scheme);
		if (it != r.factories.end())
			factory = it->second;
	}
	if (factory)
		return factory(url, options);
	std::string_view component = detail::component_of(scheme);
	if (component.empty())
		return Error{Errc::invalid_argument, "",
		             "unknown URL scheme \"" + std::string{scheme} +
		                 "\": expected postgresql, redis, redlock, etcd, zookeeper or memory"};
	return Error{Errc::invalid_argument, "",
	             "the " + std::string{scheme} + " provider is not linked in: link pglease::" +
	                 std::string{component} + " (CMake: find_package(pglease COMPONENTS " +
	                 std::string{component} + ")) or pkg-config pglease-" + std::string{component}};
}

} // namespace

} // namespace pglease
