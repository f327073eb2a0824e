// The two HIP functions CK's dispatcher asks about the device
// (ck_tile::get_device_name, get_num_cus): one gfx942 with 304 compute
// units. The stand-in HIP runtime answers every other call with "no
// device".
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstring>

hipError_t hipGetDevice(int* device)
{
    *device = 0;
    return hipSuccess;
}

hipError_t hipGetDeviceProperties(hipDeviceProp_t* props, int)
{
    std::memset(props, 0, sizeof *props);
    std::snprintf(props->gcnArchName, sizeof props->gcnArchName, "%s", "gfx942:sramecc+:xnack-");
    props->multiProcessorCount = 304;
    return hipSuccess;
}
