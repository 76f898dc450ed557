# registration.cmake -- the rule that nothing is built without being run:
# every executable of the build is a registered test, or a helper a
# registered test runs, or a named tool; every C++ source under tests/,
# examples/ and bench/ belongs to one of them.  Used by tests/CMakeLists.txt
# (which stops the configure on a problem) and by registration_selftest.cmake
# (which shows the rule catches what it should).

# pglease_registration_problems(OUT
#     EXECUTABLES targets...   every executable target of the build
#     ACCOUNTED targets...     the registered tests, helpers and tools
#     SOURCES files...         every C++ source file the rule covers
#     DECLARED files...)       the sources of the declared targets
# OUT: one line per problem, empty when the rule holds
function(pglease_registration_problems out)
	cmake_parse_arguments(PARSE_ARGV 1 A "" "" "EXECUTABLES;ACCOUNTED;SOURCES;DECLARED")
	set(problems)
	foreach(target IN LISTS A_EXECUTABLES)
		if(NOT target IN_LIST A_ACCOUNTED)
			list(APPEND problems "executable '${target}' is built but no test runs it: register it with \
pglease_test() in tests/CMakeLists.txt (or declare it with pglease_helper/pglease_tool)")
		endif()
	endforeach()
	foreach(file IN LISTS A_SOURCES)
		if(NOT file IN_LIST A_DECLARED)
			list(APPEND problems "source '${file}' is part of no declared test, helper or tool")
		endif()
	endforeach()
	set(${out} "${problems}" PARENT_SCOPE)
endfunction()
