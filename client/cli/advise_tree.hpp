// advise_tree.hpp -- what the decision tree lends to the argument parser.
//
// decide() itself is declared in advise.hpp; the parser also needs the
// tree's own check of an input, so that a bad value is a usage error (64)
// before it could be a refusal (65).
#ifndef PGLEASE_CLI_ADVISE_TREE_HPP
#define PGLEASE_CLI_ADVISE_TREE_HPP

#include <string>

#include "advise.hpp"

namespace pglease::cli {

// validate -- why the input cannot be advised on, or "" when it can.
[[nodiscard]] std::string validate(const AdviseInput &input);

} // namespace pglease::cli

#endif // PGLEASE_CLI_ADVISE_TREE_HPP
