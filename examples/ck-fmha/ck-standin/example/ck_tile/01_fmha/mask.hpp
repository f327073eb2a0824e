// Stand-in for CK's example/ck_tile/01_fmha/mask.hpp: the mask kinds of the
// public traits.
#pragma once

enum class mask_enum
{
    no_mask = 0,
    mask_top_left,
    mask_bottom_right,
    window_generic,
};
