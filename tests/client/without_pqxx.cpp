// without_pqxx.cpp -- compiled (never run) by the without_pqxx test
// (client/cmake/without_pqxx.cmake) with every libpqxx header replaced by an
// #error: a program that uses pglease::connect, pglease::status and the
// calls that take no pqxx type needs only <pglease/pglease.hpp>, which must
// not include libpqxx.
#include <pglease/pglease.hpp>

int
main()
{
	auto locker = pglease::connect("redis://127.0.0.1:6379");
	if (!locker)
		return 1;
	auto lease = (*locker)->try_acquire("r");
	auto pg = pglease::connect("");
	if (!pg)
		return 1;
	auto rows = pglease::status(**pg);
	auto renewed = (*pg)->renew("r", 1, std::chrono::seconds{1});
	return lease && rows && renewed ? 0 : 1;
}
