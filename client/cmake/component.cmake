# pglease_component(NAME EXPORT <set> DESCRIPTION <text> [REQUIRES <pc modules>]
#                   [PC_LIBS <flags>] SOURCES <files...> [LINK <libraries...>])
#
# One optional provider of pglease as a static library of its own
# (pglease_<NAME>, exported as pglease::<NAME>): the pglease target stays free
# of the provider's client library, so a service that links only the
# PostgreSQL provider pulls in no new one (docs/design.md#components).
#
# Nothing references the object that registers the provider's URL schemes
# with connect() (src/<NAME>/component.cpp defines pglease_<NAME>_component),
# so a static link would drop it: every program linking pglease::<NAME> names
# that anchor undefined, through the target's INTERFACE link options and the
# installed pglease-<NAME>.pc.  find_package(pglease COMPONENTS <NAME>) loads
# the export set (pgleaseConfig.cmake.in); there is no public header: the
# lockers are reached through pglease::connect(url).
function(pglease_component name)
	cmake_parse_arguments(PARSE_ARGV 1 C "" "EXPORT;DESCRIPTION;PC_LIBS" "REQUIRES;SOURCES;LINK")
	set(target pglease_${name})
	add_library(${target} ${C_SOURCES})
	add_library(pglease::${name} ALIAS ${target})
	target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
	target_link_libraries(${target} PUBLIC pglease PRIVATE ${C_LINK})
	target_compile_options(${target} PRIVATE ${PGLEASE_WARNINGS})
	set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${name})
	set(anchor pglease_${name}_component)
	target_link_options(${target} INTERFACE "LINKER:--undefined=${anchor}")
	string(TOUPPER ${name} upper)
	set(PGLEASE_${upper}_ANCHOR ${anchor} PARENT_SCOPE) # for programs linked by hand (advise_emit_test)

	install(TARGETS ${target} EXPORT ${C_EXPORT}
		ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
		LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
	install(EXPORT ${C_EXPORT} NAMESPACE pglease:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pglease)
	# the variables pglease-component.pc.in reads
	set(PC_NAME pglease-${name})
	set(PC_DESCRIPTION "${C_DESCRIPTION}")
	string(JOIN " " PC_REQUIRES pglease ${C_REQUIRES})
	set(PC_LIBS "-L\${libdir} -Wl,--undefined=${anchor} -l${target} ${C_PC_LIBS}")
	string(STRIP "${PC_LIBS}" PC_LIBS)
	configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/pglease-component.pc.in
		${CMAKE_CURRENT_BINARY_DIR}/pglease-${name}.pc @ONLY)
	install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pglease-${name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
