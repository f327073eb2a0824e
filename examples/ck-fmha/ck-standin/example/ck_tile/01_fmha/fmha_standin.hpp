// What the stand-in kernels do in place of CK's GPU kernels: each writes a
// record of which kernel ran, and with which arguments, at the start of its
// output tensor, and returns the kernel's id where CK returns the kernel
// time. A caller reads the record back to see which blob ran and that the
// argument struct arrived field by field.
//
// A record is the kernel name, then ` key=value` pairs, NUL-terminated, at
// most kRecordBytes bytes; nothing is written through a null pointer.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <variant>

namespace fmha_standin {

constexpr std::size_t kRecordBytes = 512;

// FNV-1a of the name, low 24 bits, so that the float returned is exact.
inline uint32_t kernel_id(const char* name)
{
    uint32_t h = 2166136261u;
    for(; *name != '\0'; ++name)
    {
        h ^= static_cast<unsigned char>(*name);
        h *= 16777619u;
    }
    return h & 0xffffffu;
}

__attribute__((format(printf, 3, 4))) inline float
record(void* out, const char* name, const char* fmt, ...)
{
    if(out != nullptr)
    {
        char* p     = static_cast<char*>(out);
        const int n = std::snprintf(p, kRecordBytes, "%s", name);
        if(n >= 0 && static_cast<std::size_t>(n) < kRecordBytes)
        {
            va_list ap;
            va_start(ap, fmt);
            std::vsnprintf(p + n, kRecordBytes - static_cast<std::size_t>(n), fmt, ap);
            va_end(ap);
        }
    }
    return static_cast<float>(kernel_id(name));
}

// CK's drop_seed_offset: the seed and offset themselves, or pointers to
// them in device memory (recorded as `ptr`).
using drop_seed_offset_t =
    std::variant<std::pair<uint64_t, uint64_t>, std::pair<const void*, const void*>>;

inline unsigned long long drop_seed(const drop_seed_offset_t& v)
{
    const auto* values = std::get_if<0>(&v);
    return values != nullptr ? static_cast<unsigned long long>(values->first) : 0ull;
}

inline unsigned long long drop_offset(const drop_seed_offset_t& v)
{
    const auto* values = std::get_if<0>(&v);
    return values != nullptr ? static_cast<unsigned long long>(values->second) : 0ull;
}

inline const char* drop_kind(const drop_seed_offset_t& v)
{
    return v.index() == 0 ? "values" : "ptr";
}

} // namespace fmha_standin
