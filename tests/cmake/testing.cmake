# testing.cmake -- the functions tests/CMakeLists.txt declares its tests,
# helpers, tools and fixtures with.  Each target they declare is recorded for
# the registration rule (registration.cmake): run by a test, or named a tool.

# ---- what the registration check counts -------------------------------------

# pglease_account(TARGET) -- TARGET is run by a test, or a named tool: its
# sources are declared
function(pglease_account target)
	set_property(GLOBAL APPEND PROPERTY PGLEASE_ACCOUNTED ${target})
	get_target_property(sources ${target} SOURCES)
	get_target_property(dir ${target} SOURCE_DIR)
	foreach(source IN LISTS sources)
		get_filename_component(source ${source} ABSOLUTE BASE_DIR ${dir})
		set_property(GLOBAL APPEND PROPERTY PGLEASE_DECLARED_SOURCES ${source})
	endforeach()
endfunction()

# pglease_tool(TARGET) -- TARGET is run by hand or by a make target, not by a test
function(pglease_tool target)
	pglease_account(${target})
endfunction()

# pglease_executable(NAME SOURCES files... LIBS libs...) -- with the
# project's warnings, the providers' private headers and the paths tests use
function(pglease_executable name)
	cmake_parse_arguments(PARSE_ARGV 1 A "" "" "SOURCES;LIBS")
	add_executable(${name} ${A_SOURCES})
	target_link_libraries(${name} PRIVATE ${A_LIBS})
	target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
	# The tests and their workers are compiled without optimization (-O0, after
	# the build type's -O2): they only drive the libraries, which keep the build
	# type's flags, and a GoogleTest file takes half the compiler time at -O0
	# (etcd_locker_test.cpp: 44 s of CPU at -O2 -g, 22 s at -O0 -g)
	target_compile_options(${name} PRIVATE ${PGLEASE_WARNINGS} -O0)
	target_compile_definitions(${name} PRIVATE PGLEASE_SOURCE_DIR="${PGLEASE_ROOT}"
		PGLEASE_CLI="$<TARGET_FILE:pglease_cli>")
	add_dependencies(${name} pglease_cli)
endfunction()

# pglease_helper(NAME SOURCES files... LIBS libs... USED_BY what) -- a
# worker or example that registered tests run (USED_BY says which)
function(pglease_helper name)
	cmake_parse_arguments(PARSE_ARGV 1 A "" "" "SOURCES;LIBS;USED_BY")
	if(NOT A_USED_BY)
		message(FATAL_ERROR "pglease_helper(${name}): USED_BY names the tests that run it")
	endif()
	pglease_executable(${name} SOURCES ${A_SOURCES} LIBS ${A_LIBS})
	pglease_account(${name})
	set_property(GLOBAL APPEND PROPERTY PGLEASE_HELPER_USERS ${A_USED_BY})
endfunction()

# ---- registering tests -----------------------------------------------------

# pglease_register(NAME LABELS l... [FIXTURES f...] [LOCKS r...] [ENV VAR=value...]
#                  [TIMEOUT s] COMMAND cmd args...)
# -- LOCKS: CTest RESOURCE_LOCKs, so that `ctest -j` never runs two tests that
# name one of them at once (pglease_cluster_locks() gives a cluster's)
function(pglease_register name)
	cmake_parse_arguments(PARSE_ARGV 1 A "" "TIMEOUT" "LABELS;FIXTURES;LOCKS;ENV;COMMAND")
	if(NOT A_LABELS)
		message(FATAL_ERROR "test ${name} has no LABELS")
	endif()
	if(NOT A_TIMEOUT)
		set(A_TIMEOUT 900)
	endif()
	add_test(NAME ${name} COMMAND ${A_COMMAND} WORKING_DIRECTORY ${PGLEASE_ROOT})
	set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT})
	if(A_FIXTURES)
		set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "${A_FIXTURES}")
	endif()
	if(A_LOCKS)
		set_tests_properties(${name} PROPERTIES RESOURCE_LOCK "${A_LOCKS}")
	endif()
	# the fixtures' environment first: the test's own ENV overrides it
	set(env)
	foreach(fixture IN LISTS A_FIXTURES)
		get_property(fixture_env GLOBAL PROPERTY PGLEASE_FIXTURE_ENV_${fixture})
		list(APPEND env ${fixture_env})
	endforeach()
	list(APPEND env ${A_ENV})
	if(env)
		set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
	endif()
endfunction()

# pglease_test(NAME LABELS l... [LIBS libs...] [SOURCES files...]
#              [FIXTURES f...] [LOCKS r...] [ENV VAR=value...] [TIMEOUT s])
# -- the GoogleTest binary NAME (default source tests/client/NAME.cpp), run by CTest
function(pglease_test name)
	cmake_parse_arguments(PARSE_ARGV 1 A "" "TIMEOUT" "LABELS;LIBS;SOURCES;FIXTURES;LOCKS;ENV")
	if(NOT A_SOURCES)
		set(A_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/client/${name}.cpp)
	endif()
	pglease_executable(${name} SOURCES ${A_SOURCES} LIBS ${A_LIBS} GTest::gtest GTest::gtest_main)
	pglease_account(${name})
	pglease_register(${name} LABELS ${A_LABELS} FIXTURES ${A_FIXTURES} LOCKS ${A_LOCKS} ENV ${A_ENV}
		TIMEOUT ${A_TIMEOUT} COMMAND ${name})
endfunction()

# pglease_shell_test(NAME SCRIPT LABELS ... [ARGS ...] [FIXTURES ...] [LOCKS ...] [ENV ...])
# -- a test script printing ok/not ok lines, run with bash
function(pglease_shell_test name script)
	cmake_parse_arguments(PARSE_ARGV 2 A "" "TIMEOUT" "LABELS;FIXTURES;LOCKS;ENV;ARGS")
	pglease_register(${name} LABELS shell ${A_LABELS} FIXTURES ${A_FIXTURES} LOCKS ${A_LOCKS} ENV ${A_ENV}
		TIMEOUT ${A_TIMEOUT} COMMAND bash ${PGLEASE_ROOT}/${script} ${A_ARGS})
endfunction()

# ---- fixtures: servers that several tests share ------------------------------

# pglease_fixture(NAME START cmd... STOP cmd... [ENV VAR=value...])
# -- tests that name NAME in FIXTURES get its ENV
function(pglease_fixture name)
	cmake_parse_arguments(PARSE_ARGV 1 A "" "" "START;STOP;ENV")
	add_test(NAME ${name}.start COMMAND ${A_START} WORKING_DIRECTORY ${PGLEASE_ROOT})
	add_test(NAME ${name}.stop COMMAND ${A_STOP} WORKING_DIRECTORY ${PGLEASE_ROOT})
	set_tests_properties(${name}.start PROPERTIES FIXTURES_SETUP ${name} LABELS fixture TIMEOUT 180
		ENVIRONMENT "${A_ENV}")
	set_tests_properties(${name}.stop PROPERTIES FIXTURES_CLEANUP ${name} LABELS fixture TIMEOUT 180
		ENVIRONMENT "${A_ENV}")
	set_property(GLOBAL PROPERTY PGLEASE_FIXTURE_ENV_${name} ${A_ENV})
endfunction()


# ---- shared servers under `ctest -j` ----------------------------------------

# A fixture's tests run side by side, each in a lane of its server (a
# RESOURCE_LOCK: one test a lane at a time); a test that stops or restarts
# the server, or reads its server-wide counters or log, takes every lane, so
# it runs there alone.
set(PGLEASE_FIXTURE_LANES 3)

# pglease_lanes(OUT FIXTURE LANE|all) -- the lock of lane LANE
# (1..PGLEASE_FIXTURE_LANES) of FIXTURE's server, or the locks of all its lanes
function(pglease_lanes out fixture lane)
	if(lane STREQUAL all)
		set(locks)
		foreach(n RANGE 1 ${PGLEASE_FIXTURE_LANES})
			list(APPEND locks ${fixture}.lane${n})
		endforeach()
	else()
		set(locks ${fixture}.lane${lane})
	endif()
	set(${out} ${locks} PARENT_SCOPE)
endfunction()
