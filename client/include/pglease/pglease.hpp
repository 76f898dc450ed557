// pglease/pglease.hpp -- the whole client: #include <pglease/pglease.hpp>
//
// It does not include libpqxx: the pqxx-typed calls (fenced, with_advisory,
// advisory_lock) are in pglease/postgres.hpp.
#pragma once

#include "pglease/election.hpp"
#include "pglease/error.hpp"
#include "pglease/lease.hpp"
#include "pglease/locker.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"
#include "pglease/status.hpp"
#include "pglease/version.hpp"
