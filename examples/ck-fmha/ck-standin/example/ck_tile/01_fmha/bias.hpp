// Stand-in for CK's example/ck_tile/01_fmha/bias.hpp: the bias kinds of
// the public traits (same values as ck_tile::BlockAttentionBiasEnum).
#pragma once

enum class bias_enum
{
    no_bias          = 0,
    elementwise_bias = 1,
    alibi            = 2,
};
