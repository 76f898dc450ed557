# without_pqxx.cmake -- the test that pglease/pglease.hpp does not include
# libpqxx (cmake -P, from the without_pqxx test of CMakeLists.txt).
#
# libpqxx's headers are in a default include directory (/usr/include), which
# no flag removes: each one is shadowed instead by a header of the same name
# that is an #error, in a directory searched first.  Then SOURCE (a program
# using only <pglease/pglease.hpp>) must compile, and a program including
# <pglease/postgres.hpp> must not: the control that shows the shadowing works.
#
# In: CXX, INCLUDES ('|'-separated pglease include directories), SOURCE,
# PQXX_DIR (the directory holding libpqxx's pqxx/), WORK (a scratch directory).
foreach(var CXX INCLUDES SOURCE PQXX_DIR WORK)
	if(NOT DEFINED ${var})
		message(FATAL_ERROR "without_pqxx.cmake: -D${var}=... is missing")
	endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/shadow/pqxx)
file(GLOB pqxx_headers RELATIVE ${PQXX_DIR}/pqxx ${PQXX_DIR}/pqxx/*)
list(LENGTH pqxx_headers count)
if(count EQUAL 0)
	message(FATAL_ERROR "no libpqxx headers under ${PQXX_DIR}/pqxx: nothing to shadow")
endif()
foreach(header ${pqxx_headers})
	file(WRITE ${WORK}/shadow/pqxx/${header} "#error \"libpqxx header pqxx/${header} included\"\n")
endforeach()

string(REPLACE "|" ";" include_dirs "${INCLUDES}")
set(flags -std=c++17 -fsyntax-only -I${WORK}/shadow)
foreach(dir ${include_dirs})
	list(APPEND flags -I${dir})
endforeach()

execute_process(COMMAND ${CXX} ${flags} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR "a program using only <pglease/pglease.hpp> does not compile without libpqxx:\n${out}")
endif()

file(WRITE ${WORK}/control.cpp "#include <pglease/postgres.hpp>\nint main() { return 0; }\n")
execute_process(COMMAND ${CXX} ${flags} ${WORK}/control.cpp RESULT_VARIABLE rc OUTPUT_VARIABLE out
	ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "libpqxx header pqxx/")
	message(FATAL_ERROR "the control compiled without libpqxx, or failed for another reason: the "
		"shadowing does not work, so the check proves nothing:\n${out}")
endif()
message(STATUS "without_pqxx: <pglease/pglease.hpp> compiles with all ${count} libpqxx headers shadowed")
