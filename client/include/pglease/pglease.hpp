// pglease/pglease.hpp -- the whole client: #include <pglease/pglease.hpp>
#pragma once

#include "pglease/client.hpp"
#include "pglease/error.hpp"
#include "pglease/lease.hpp"
#include "pglease/locker.hpp"
#include "pglease/options.hpp"
#include "pglease/result.hpp"
#include "pglease/version.hpp"
