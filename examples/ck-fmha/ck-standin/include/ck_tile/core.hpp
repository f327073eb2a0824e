// Stand-in for CK's include/ck_tile/core.hpp: the core names the FMHA
// example's headers and its generated blobs use, for the host compiler.
#pragma once

#include <cstdint>

namespace ck_tile {
using index_t      = int32_t;
using long_index_t = int64_t;

template <index_t... Is>
struct sequence
{
};
} // namespace ck_tile
