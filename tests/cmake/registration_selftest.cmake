# registration_selftest.cmake -- cmake -P: the registration rule
# (registration.cmake) reports a built but unregistered binary and a test
# source no target compiles, and nothing when every one is accounted for.
# Prints ok/not ok lines; fails if the rule misses a planted problem.
cmake_minimum_required(VERSION 3.16) # IN_LIST
include(${CMAKE_CURRENT_LIST_DIR}/registration.cmake)

set(failed 0)
# expect_found(NAME TEXT WANTED) -- the problems name TEXT (WANTED 1) or not (0)
function(expect_found name text wanted)
	string(FIND "${problems}" "${text}" at)
	if(at EQUAL -1)
		set(found 0)
	else()
		set(found 1)
	endif()
	if(found EQUAL wanted)
		message("ok - ${name}")
	else()
		message("not ok - ${name}: got '${problems}'")
		set(failed 1 PARENT_SCOPE)
	endif()
endfunction()

pglease_registration_problems(problems
	EXECUTABLES client_test new_test pglease_fault_worker
	ACCOUNTED client_test pglease_fault_worker
	SOURCES /src/tests/client/client_test.cpp /src/tests/client/forgotten_test.cpp
	DECLARED /src/tests/client/client_test.cpp)
expect_found(unregistered_binary_is_reported "'new_test' is built but no test runs it" 1)
expect_found(source_of_no_target_is_reported "'/src/tests/client/forgotten_test.cpp' is part of no" 1)
expect_found(registered_binary_is_not_reported "'client_test'" 0)
expect_found(compiled_source_is_not_reported "client_test.cpp' is part" 0)

pglease_registration_problems(problems
	EXECUTABLES client_test pglease_fault_worker
	ACCOUNTED client_test pglease_fault_worker
	SOURCES /src/tests/client/client_test.cpp
	DECLARED /src/tests/client/client_test.cpp /src/client/cli/main.cpp)
if(problems STREQUAL "")
	message("ok - nothing_reported_when_all_are_accounted_for")
else()
	message("not ok - nothing_reported_when_all_are_accounted_for: got '${problems}'")
	set(failed 1)
endif()

if(failed)
	message(FATAL_ERROR "the registration rule missed a planted problem")
endif()
