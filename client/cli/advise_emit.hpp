// advise_emit.hpp -- the code `pglease advise --emit` adds after the advice.
#ifndef PGLEASE_CLI_ADVISE_EMIT_HPP
#define PGLEASE_CLI_ADVISE_EMIT_HPP

#include <string>

#include "advise.hpp"

namespace pglease::cli {

// emit_code -- the code for input.emit: "sql" (a psql script for PostgreSQL,
// one "# " comment line for any other provider) or "cpp" (every provider);
// "" for no --emit. The format is render()'s, in advise.hpp.
[[nodiscard]] std::string emit_code(const Advice &advice, const AdviseInput &input);

} // namespace pglease::cli

#endif // PGLEASE_CLI_ADVISE_EMIT_HPP
