// Stand-in for CK's include/ck_tile/host/stream_config.hpp: the same
// fields in the same order, with hipStream_t declared as HIP declares it.
#pragma once

typedef struct ihipStream_t* hipStream_t;

namespace ck_tile {
struct stream_config
{
    hipStream_t stream_id_ = nullptr;
    bool time_kernel_      = false;
    int log_level_         = 0;
    int cold_niters_       = 3;
    int nrepeat_           = 10;
    bool is_gpu_timer_     = true;
    bool flush_cache_      = false;
    int rotating_count_    = 1;
};
} // namespace ck_tile
