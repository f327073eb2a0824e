// Stand-in for CK's example/ck_tile/01_fmha/rotary.hpp: the rotary
// embedding kinds of the append-KV traits.
#pragma once

enum class rope_enum
{
    none         = 0,
    interleaved  = 1,
    half_rotated = 2,
};
