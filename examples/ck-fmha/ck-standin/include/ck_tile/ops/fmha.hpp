// Stand-in for CK's include/ck_tile/ops/fmha.hpp: the enums and the mask
// and dropout templates that the traits of generated blobs name.
#pragma once

namespace ck_tile {
enum class BlockFmhaPipelineEnum
{
    QRKSVS = 0,
    QRKSVS_ASYNC,
    QSKSVS,
};

enum class BlockFmhaBwdPipelineEnum
{
    KRKTRVR_IGLP = 0,
    KRKTRVR,
};

enum class BlockAttentionBiasEnum
{
    NO_BIAS          = 0,
    ELEMENTWISE_BIAS = 1,
    ALIBI            = 2,
};

enum class RotaryEmbeddingEnum
{
    NONE         = 0,
    INTERLEAVED  = 1,
    HALF_ROTATED = 2,
};

template <bool IsMasking_>
struct SimplifiedGenericAttentionMask
{
};

template <bool IsDropout_, bool IsWG32_, bool IsStoreRandval_>
struct BlockDropoutBwd
{
};
} // namespace ck_tile
