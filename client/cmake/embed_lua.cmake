# embed_lua.cmake -- run by the build (cmake -P) to embed Lua scripts in C++:
#   cmake -DLUA_DIR=<dir> -DSCRIPTS=<name>,<name>... -DHEADER=<file.hpp>
#         -DNAMESPACE=<ns> -DCOMPOSED=<dir> -P embed_lua.cmake
#
# Each script is LUA_DIR/<name>.lua.  Its text: the file without its banner
# (the comment lines it starts with), each line "--#include <lib>" replaced
# by LUA_DIR/lib/<lib>.lua's text (without its banner, no includes of its
# own).  HEADER gets one `inline constexpr std::string_view <name>` per
# script, a raw string literal; COMPOSED/<name>.lua the same text, for the
# tests that run the scripts as Lua (tests/client/redis_lua_test.cpp).
cmake_minimum_required(VERSION 3.16)

# the raw strings' delimiter: a text holding it would end its literal early
set(delimiter "pglease_lua")

# lua_text(FILE OUT) -- FILE's text without its banner
function(lua_text file out)
	file(READ ${file} text)
	if(text MATCHES "^(--([^#\n][^\n]*)?\n)+")
		string(LENGTH "${CMAKE_MATCH_0}" banner)
		string(SUBSTRING "${text}" ${banner} -1 text)
	endif()
	set(${out} "${text}" PARENT_SCOPE)
endfunction()

# composed(NAME OUT) -- the script NAME, its includes replaced
function(composed name out)
	lua_text(${LUA_DIR}/${name}.lua text)
	while(text MATCHES "--#include ([A-Za-z0-9_]+)\n")
		set(lib ${CMAKE_MATCH_1})
		if(NOT EXISTS ${LUA_DIR}/lib/${lib}.lua)
			message(FATAL_ERROR "${LUA_DIR}/${name}.lua includes ${lib}: no ${LUA_DIR}/lib/${lib}.lua")
		endif()
		lua_text(${LUA_DIR}/lib/${lib}.lua lib_text)
		if(lib_text MATCHES "--#include")
			message(FATAL_ERROR "${LUA_DIR}/lib/${lib}.lua: a library includes nothing")
		endif()
		string(REPLACE "--#include ${lib}\n" "${lib_text}" text "${text}")
	endwhile()
	set(${out} "${text}" PARENT_SCOPE)
endfunction()

string(REPLACE "," ";" scripts "${SCRIPTS}")
set(body "")
foreach(name IN LISTS scripts)
	composed(${name} text)
	string(FIND "${text}" ")${delimiter}\"" clash)
	if(NOT clash EQUAL -1)
		message(FATAL_ERROR "${LUA_DIR}/${name}.lua holds )${delimiter}\", the end of its C++ raw string")
	endif()
	file(WRITE ${COMPOSED}/${name}.lua.new "${text}")
	file(RENAME ${COMPOSED}/${name}.lua.new ${COMPOSED}/${name}.lua)
	string(APPEND body "/// ${name}.lua\ninline constexpr std::string_view ${name} = R\"${delimiter}(${text})${delimiter}\";\n\n")
endforeach()

file(WRITE ${HEADER}.new "// Generated from ${LUA_DIR}/*.lua by embed_lua.cmake: do not edit.
#pragma once

#include <string_view>

namespace ${NAMESPACE} {

${body}} // namespace ${NAMESPACE}
")
file(RENAME ${HEADER}.new ${HEADER})
