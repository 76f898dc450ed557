# advise_test.cmake -- the test of `pglease advise` (included by
# tests/CMakeLists.txt): its own build, because it compiles the CLI's advise
# sources and the code `advise --emit cpp` prints.
# advise_emit_test.cpp compiles the code `advise --emit cpp` prints with this
# compiler against the libraries of this build tree, runs it against real
# servers (the test database of PG* and the redis-servers, etcd member and
# ZooKeeper server it starts itself, on ports it draws free), and needs the
# flags a user's build would have.
pkg_check_modules(ADVISE_LIBPQ REQUIRED libpq)
set(ADVISE_EMIT_LIBS $<TARGET_FILE:pglease> ${PQXX_LDFLAGS} ${ADVISE_LIBPQ_LDFLAGS} -pthread)
set(ADVISE_EMIT_FLAGS -std=c++17 ${PQXX_CFLAGS})
if(PGLEASE_SANITIZE)
	list(APPEND ADVISE_EMIT_FLAGS -fsanitize=address,undefined)
endif()
if(PGLEASE_WITH_REDIS)
	# as pglease-redis.pc links it: the anchor keeps the registration of
	# redis:// and redlock:// in a static link
	list(PREPEND ADVISE_EMIT_LIBS -Wl,--undefined=${PGLEASE_REDIS_ANCHOR} $<TARGET_FILE:pglease_redis>)
	list(APPEND ADVISE_EMIT_LIBS ${HIREDIS_LDFLAGS} ${OPENSSL_LDFLAGS})
endif()
if(PGLEASE_WITH_ETCD)
	list(PREPEND ADVISE_EMIT_LIBS -Wl,--undefined=${PGLEASE_ETCD_ANCHOR} $<TARGET_FILE:pglease_etcd>)
	list(APPEND ADVISE_EMIT_LIBS ${CURL_LDFLAGS})
endif()
if(PGLEASE_WITH_ZOOKEEPER)
	list(PREPEND ADVISE_EMIT_LIBS -Wl,--undefined=${PGLEASE_ZOOKEEPER_ANCHOR} $<TARGET_FILE:pglease_zookeeper>)
	list(APPEND ADVISE_EMIT_LIBS ${ZOOKEEPER_MT_LIBRARY})
endif()
list(JOIN ADVISE_EMIT_LIBS "|" ADVISE_EMIT_LIBS)
list(JOIN ADVISE_EMIT_FLAGS "|" ADVISE_EMIT_FLAGS)
# the CLI's advise sources, as client/CMakeLists.txt lists them for pglease_cli
list(TRANSFORM PGLEASE_ADVISE_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/ OUTPUT_VARIABLE advise_sources)
add_executable(advise_test ${PGLEASE_ROOT}/tests/client/advise_test.cpp ${PGLEASE_ROOT}/tests/client/advise_emit_test.cpp
	${advise_sources})
target_include_directories(advise_test PRIVATE ${PROJECT_SOURCE_DIR}/cli)
# -O0 as every test (tests/cmake/testing.cmake, pglease_executable)
target_compile_options(advise_test PRIVATE -O0)
target_link_libraries(advise_test PRIVATE pglease GTest::gtest GTest::gtest_main)
target_compile_definitions(advise_test PRIVATE
	PGLEASE_SOURCE_DIR="${PGLEASE_ROOT}"
	ADVISE_EMIT_CXX="${CMAKE_CXX_COMPILER}"
	ADVISE_EMIT_INCLUDES="$<JOIN:$<TARGET_PROPERTY:pglease,INTERFACE_INCLUDE_DIRECTORIES>,|>"
	ADVISE_EMIT_FLAGS="${ADVISE_EMIT_FLAGS}"
	ADVISE_EMIT_LIBS="${ADVISE_EMIT_LIBS}"
	ADVISE_EMIT_REDIS=$<BOOL:${PGLEASE_WITH_REDIS}>
	ADVISE_EMIT_ETCD=$<BOOL:${PGLEASE_WITH_ETCD}>
	ADVISE_EMIT_ZOOKEEPER=$<BOOL:${PGLEASE_WITH_ZOOKEEPER}>)
if(PGLEASE_WITH_REDIS)
	add_dependencies(advise_test pglease_redis)
endif()
if(PGLEASE_WITH_ETCD)
	add_dependencies(advise_test pglease_etcd)
endif()
if(PGLEASE_WITH_ZOOKEEPER)
	add_dependencies(advise_test pglease_zookeeper)
endif()
pglease_account(advise_test)
pglease_register(advise_test LABELS postgres redis FIXTURES pg_preload LOCKS ${pg_preload_2}
	ENV ${CLIENT_DB} COMMAND advise_test)
