// A C++ blob that uses the C ABI through function pointers it is handed
// (so it needs no symbol from the test program), as a dispatcher would.
#include "ck_jit.h"

#include <cstring>

typedef ck_jit_fn (*resolve_fn)(const char*);
typedef const char* (*last_error_fn)(void);

extern "C" int caller(resolve_fn resolve, last_error_fn last_error, int x)
{
    ck_jit_fn add_two = resolve("add_two");
    if(add_two == nullptr)
        return -1;
    if(resolve("no_such_blob") != nullptr)
        return -2;
    const char* why = last_error();
    if(why == nullptr || std::strstr(why, "no_such_blob") == nullptr)
        return -3;
    if(resolve(nullptr) != nullptr || last_error() == nullptr)
        return -4;
    return reinterpret_cast<int (*)(int)>(add_two)(x);
}
