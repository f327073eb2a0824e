// A C++ program linked against libck_jit_capi.a: resolves a blob of the
// manifest named by CK_JIT_MANIFEST, calls it, and checks the error path.
// Prints "ok <result>" or the failure.
#include "ck_jit.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

int main(int argc, char** argv)
{
    if(argc != 2)
        return 2;
    if(ck_jit_set_cache_dir(argv[1]) != 0)
    {
        std::printf("set_cache_dir: %s\n", ck_jit_last_error());
        return 1;
    }
    using square_fn = int (*)(int);
    square_fn square = ck_jit::resolve<square_fn>("square");
    if(ck_jit_resolve("cube") != nullptr)
        return 3;
    const char* why = ck_jit_last_error();
    if(why == nullptr || std::strstr(why, "'cube'") == nullptr)
        return 4;
    try
    {
        ck_jit::resolve<square_fn>("cube");
        return 5;
    }
    catch(const std::runtime_error& e)
    {
        if(std::strstr(e.what(), "'cube'") == nullptr)
            return 6;
    }
    std::printf("ok %d\n", square(12));
    return 0;
}
