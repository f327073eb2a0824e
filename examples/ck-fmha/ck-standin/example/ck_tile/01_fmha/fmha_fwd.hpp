// Stand-in for CK's example/ck_tile/01_fmha/fmha_fwd.hpp, for the host
// compiler: the data type tags, the argument structs, the traits templates
// and entry templates that generated blobs specialise, and the public
// traits and dispatcher declarations. The argument structs have every
// field of CK's, in CK's order (the version whose code generator wrote the
// blob list: fp8 static quantisation through scale_p/scale_o, dropout seed
// and offset as a std::variant). Kernel bodies are replaced by
// fmha_standin.hpp's records.
#pragma once

#include "ck_tile/core.hpp"
#include "ck_tile/host/kernel_launch.hpp"
#include "ck_tile/ops/fmha.hpp"

#include "bias.hpp"
#include "fmha_standin.hpp"
#include "mask.hpp"
#include "rotary.hpp"

#include <string>
#include <utility>
#include <variant>

struct FmhaFwdFp16
{
};

struct FmhaFwdBf16
{
};

struct FmhaFwdFp8
{
};

struct FmhaFwdBf8
{
};

// The arguments of one forward call (CK's field order).
struct fmha_fwd_args
{
    const void* q_ptr;
    const void* k_ptr;
    const void* v_ptr;
    const void* bias_ptr;
    void* rand_val_ptr;
    void* lse_ptr;
    void* o_ptr;

    const void* seqstart_q_ptr;
    const void* seqstart_k_ptr;
    const void* seqlen_k_ptr;

    ck_tile::index_t seqlen_q;
    ck_tile::index_t seqlen_k;
    ck_tile::index_t batch;
    ck_tile::index_t max_seqlen_q;
    ck_tile::index_t hdim_q;
    ck_tile::index_t hdim_v;
    ck_tile::index_t nhead_q;
    ck_tile::index_t nhead_k;

    float scale_s;
    float scale_p;
    float scale_o;

    ck_tile::index_t stride_q;
    ck_tile::index_t stride_k;
    ck_tile::index_t stride_v;
    ck_tile::index_t stride_bias;
    ck_tile::index_t stride_randval;
    ck_tile::index_t stride_o;
    ck_tile::index_t nhead_stride_q;
    ck_tile::index_t nhead_stride_k;
    ck_tile::index_t nhead_stride_v;
    ck_tile::index_t nhead_stride_bias;
    ck_tile::index_t nhead_stride_randval;
    ck_tile::index_t nhead_stride_lse;
    ck_tile::index_t nhead_stride_o;
    ck_tile::index_t batch_stride_q;
    ck_tile::index_t batch_stride_k;
    ck_tile::index_t batch_stride_v;
    ck_tile::index_t batch_stride_bias;
    ck_tile::index_t batch_stride_randval;
    ck_tile::index_t batch_stride_lse;
    ck_tile::index_t batch_stride_o;

    ck_tile::index_t window_size_left;
    ck_tile::index_t window_size_right;
    ck_tile::index_t mask_type;

    float p_drop;
    bool s_randval;

    std::variant<std::pair<uint64_t, uint64_t>, std::pair<const void*, const void*>>
        drop_seed_offset;
};

// The arguments of one split-KV call: the split pass and the combine pass.
struct fmha_fwd_splitkv_args
{
    const void* q_ptr;
    const void* k_ptr;
    const void* v_ptr;
    const void* bias_ptr;
    void* lse_acc_ptr;
    void* o_acc_ptr;
    void* lse_ptr;
    void* o_ptr;

    void* block_table_ptr;
    ck_tile::index_t batch_stride_block_table;
    ck_tile::index_t page_block_size;

    const void* cache_batch_idx;

    const void* seqstart_q_ptr;
    const void* seqstart_k_ptr;
    const void* seqlen_k_ptr;

    ck_tile::index_t seqlen_q;
    ck_tile::index_t seqlen_k;
    ck_tile::index_t batch;
    ck_tile::index_t max_seqlen_q;
    ck_tile::index_t hdim_q;
    ck_tile::index_t hdim_v;
    ck_tile::index_t nhead_q;
    ck_tile::index_t nhead_k;
    ck_tile::index_t num_splits;

    float scale_s;
    float scale_p;
    float scale_o;

    ck_tile::index_t stride_q;
    ck_tile::index_t stride_k;
    ck_tile::index_t stride_v;
    ck_tile::index_t stride_bias;
    ck_tile::index_t stride_o_acc;
    ck_tile::index_t stride_o;
    ck_tile::index_t nhead_stride_q;
    ck_tile::index_t nhead_stride_k;
    ck_tile::index_t nhead_stride_v;
    ck_tile::index_t nhead_stride_bias;
    ck_tile::index_t nhead_stride_lse;
    ck_tile::index_t nhead_stride_lse_acc;
    ck_tile::index_t nhead_stride_o_acc;
    ck_tile::index_t nhead_stride_o;
    ck_tile::index_t batch_stride_q;
    ck_tile::index_t batch_stride_k;
    ck_tile::index_t batch_stride_v;
    ck_tile::index_t batch_stride_bias;
    ck_tile::index_t batch_stride_lse;
    ck_tile::index_t batch_stride_lse_acc;
    ck_tile::index_t batch_stride_o_acc;
    ck_tile::index_t batch_stride_o;
    ck_tile::index_t split_stride_lse_acc;
    ck_tile::index_t split_stride_o_acc;

    ck_tile::index_t window_size_left;
    ck_tile::index_t window_size_right;
    ck_tile::index_t mask_type;
};

// The arguments of one KV-cache append.
struct fmha_fwd_appendkv_args
{
    void* q_ptr;
    void* k_ptr;
    const void* knew_ptr;
    void* v_ptr;
    const void* vnew_ptr;

    const void* seqlen_k_ptr;

    ck_tile::index_t seqlen_q;
    ck_tile::index_t seqlen_knew;
    ck_tile::index_t batch;
    ck_tile::index_t hdim_q;
    ck_tile::index_t hdim_v;
    ck_tile::index_t nhead_q;
    ck_tile::index_t nhead_k;

    const void* rotary_cos_ptr;
    const void* rotary_sin_ptr;
    ck_tile::index_t rotary_dim;
    bool has_mask;

    void* block_table_ptr;
    ck_tile::index_t batch_stride_block_table;
    ck_tile::index_t page_block_size;

    const void* cache_batch_idx;

    ck_tile::index_t stride_q;
    ck_tile::index_t stride_k;
    ck_tile::index_t stride_knew;
    ck_tile::index_t stride_v;
    ck_tile::index_t stride_vnew;
    ck_tile::index_t nhead_stride_q;
    ck_tile::index_t nhead_stride_k;
    ck_tile::index_t nhead_stride_knew;
    ck_tile::index_t nhead_stride_v;
    ck_tile::index_t nhead_stride_vnew;
    ck_tile::index_t batch_stride_q;
    ck_tile::index_t batch_stride_k;
    ck_tile::index_t batch_stride_knew;
    ck_tile::index_t batch_stride_v;
    ck_tile::index_t batch_stride_vnew;
};

// The stand-in kernels' records: the arguments a caller most easily gets
// wrong, and the last fields of each struct (a layout mismatch shows there).
namespace fmha_standin {

inline float run(const char* name, void* out, const fmha_fwd_args& a)
{
    return record(out,
                  name,
                  " seqlen_q=%d seqlen_k=%d batch=%d hdim_q=%d hdim_v=%d nhead_q=%d nhead_k=%d"
                  " scale_s=%g stride_o=%d batch_stride_o=%d window=%d,%d mask_type=%d"
                  " p_drop=%g s_randval=%d drop=%s seed=%llu offset=%llu",
                  a.seqlen_q,
                  a.seqlen_k,
                  a.batch,
                  a.hdim_q,
                  a.hdim_v,
                  a.nhead_q,
                  a.nhead_k,
                  static_cast<double>(a.scale_s),
                  a.stride_o,
                  a.batch_stride_o,
                  a.window_size_left,
                  a.window_size_right,
                  a.mask_type,
                  static_cast<double>(a.p_drop),
                  a.s_randval ? 1 : 0,
                  drop_kind(a.drop_seed_offset),
                  drop_seed(a.drop_seed_offset),
                  drop_offset(a.drop_seed_offset));
}

inline float run(const char* name, void* out, const fmha_fwd_splitkv_args& a)
{
    return record(out,
                  name,
                  " seqlen_q=%d seqlen_k=%d batch=%d hdim_q=%d hdim_v=%d nhead_q=%d nhead_k=%d"
                  " num_splits=%d scale_s=%g paged=%d page_block_size=%d"
                  " split_stride_o_acc=%d mask_type=%d",
                  a.seqlen_q,
                  a.seqlen_k,
                  a.batch,
                  a.hdim_q,
                  a.hdim_v,
                  a.nhead_q,
                  a.nhead_k,
                  a.num_splits,
                  static_cast<double>(a.scale_s),
                  a.block_table_ptr != nullptr ? 1 : 0,
                  a.page_block_size,
                  a.split_stride_o_acc,
                  a.mask_type);
}

inline float run(const char* name, void* out, const fmha_fwd_appendkv_args& a)
{
    return record(out,
                  name,
                  " seqlen_q=%d seqlen_knew=%d batch=%d hdim_q=%d hdim_v=%d nhead_q=%d nhead_k=%d"
                  " rotary_dim=%d has_mask=%d paged=%d page_block_size=%d batch_stride_vnew=%d",
                  a.seqlen_q,
                  a.seqlen_knew,
                  a.batch,
                  a.hdim_q,
                  a.hdim_v,
                  a.nhead_q,
                  a.nhead_k,
                  a.rotary_dim,
                  a.has_mask ? 1 : 0,
                  a.block_table_ptr != nullptr ? 1 : 0,
                  a.page_block_size,
                  a.batch_stride_vnew);
}

} // namespace fmha_standin

// Names one kernel variant; a blob specialises the entry template for it.
template <ck_tile::index_t HDim_,
          typename DataType_,
          bool kIsGroupMode_,
          ck_tile::index_t kM0_,
          ck_tile::index_t kN0_,
          ck_tile::index_t kK0_,
          ck_tile::index_t kN1_,
          ck_tile::index_t kK1_,
          ck_tile::index_t kK0BlockLength_,
          bool kIsVLayoutRowMajor_,
          ck_tile::BlockFmhaPipelineEnum FmhaPipelineEnum_,
          typename FmhaMask_,
          ck_tile::BlockAttentionBiasEnum BiasEnum_,
          bool kStoreLse_,
          bool kHasDropout_,
          bool kDoFp8StaticQuant_,
          bool kPadS_,
          bool kPadSK_,
          bool kPadD_,
          bool kPadDv_>
struct fmha_fwd_traits_
{
};

template <typename Traits_>
float fmha_fwd_(const ck_tile::stream_config&, fmha_fwd_args);

template <ck_tile::index_t HDim_,
          typename DataType_,
          bool kIsGroupMode_,
          ck_tile::index_t kM0_,
          ck_tile::index_t kN0_,
          ck_tile::index_t kK0_,
          ck_tile::index_t kN1_,
          ck_tile::index_t kK1_,
          ck_tile::index_t kK0BlockLength_,
          bool kIsVLayoutRowMajor_,
          ck_tile::BlockFmhaPipelineEnum FmhaPipelineEnum_,
          typename FmhaMask_,
          ck_tile::BlockAttentionBiasEnum BiasEnum_,
          bool kStoreLse_,
          bool kDoFp8StaticQuant_,
          bool kIsPagedKV_,
          bool kPadS_,
          bool kPadSK_,
          bool kPadD_,
          bool kPadDv_>
struct fmha_fwd_splitkv_traits_
{
};

template <typename Traits_>
void fmha_fwd_splitkv_oneshot_(const ck_tile::stream_config&, fmha_fwd_splitkv_args);

template <typename Traits_>
std::string fmha_fwd_splitkv_get_name_();

template <ck_tile::index_t HDim_,
          typename DataType_,
          bool kIsGroupMode_,
          ck_tile::index_t kM0_,
          ck_tile::index_t kN1_,
          bool kStoreLse_,
          bool kDoFp8StaticQuant_,
          bool kPadS_,
          bool kPadDv_>
struct fmha_fwd_splitkv_combine_traits_
{
};

template <typename Traits_>
void fmha_fwd_splitkv_combine_oneshot_(const ck_tile::stream_config&, fmha_fwd_splitkv_args);

template <typename Traits_>
std::string fmha_fwd_splitkv_combine_get_name_();

// Names one kernel variant; a blob specialises the entry template for it.
template <ck_tile::index_t HDim_,
          typename DataType_,
          ck_tile::index_t kTileSizeS_,
          ck_tile::index_t kTileSizeSk_,
          ck_tile::index_t kTileSizeD_,
          ck_tile::index_t kTileSizeDv_,
          bool kIsVLayoutRowMajor_,
          bool kPadS_,
          bool kPadSk_,
          bool kPadD_,
          bool kPadDv_,
          ck_tile::RotaryEmbeddingEnum RotaryEnum_,
          bool kIsPagedKV_>
struct fmha_fwd_appendkv_traits_
{
};

template <typename Traits_>
float fmha_fwd_appendkv_(const ck_tile::stream_config&, fmha_fwd_appendkv_args);

// The public API: what an operation needs, and the generated dispatcher.
struct fmha_fwd_traits
{
    int hdim_q;
    int hdim_v;
    std::string data_type;
    bool is_group_mode;
    bool is_v_rowmajor;
    mask_enum mask_type;
    bias_enum bias_type;
    bool has_lse;
    bool has_dropout;
    bool do_fp8_static_quant;
};
float fmha_fwd(fmha_fwd_traits, fmha_fwd_args, const ck_tile::stream_config&);

struct fmha_fwd_splitkv_traits
{
    int hdim_q;
    int hdim_v;
    std::string data_type;
    bool is_group_mode;
    bool is_v_rowmajor;
    mask_enum mask_type;
    bias_enum bias_type;
    bool has_lse;
    bool do_fp8_static_quant;
};
float fmha_fwd_splitkv(fmha_fwd_splitkv_traits,
                       fmha_fwd_splitkv_args,
                       const ck_tile::stream_config&);

struct fmha_fwd_appendkv_traits
{
    int hdim_q;
    int hdim_v;
    std::string data_type;
    bool is_v_rowmajor;
    rope_enum rope_type;
};
float fmha_fwd_appendkv(fmha_fwd_appendkv_traits,
                        fmha_fwd_appendkv_args,
                        const ck_tile::stream_config&);
