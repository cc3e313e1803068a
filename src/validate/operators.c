/* operators.c — each operator Vidur times as the Einsums it runs on one
 * GPU's shard (vidur/profiling/mlp/mlp_impl.py: column-parallel QKV and
 * up projections, row-parallel output and down projections, norms,
 * embedding and add over the whole hidden size, RoPE on the shard's Q and
 * K heads). H is the hidden size, hd = H / heads, t the degree:
 *
 *   emb            Y[m,h] = T[m,h]: the M rows of the table read, written
 *   *_layernorm    RMSNorm: SS[m] = sum_h X^2 / H; Y = X rsqrt(SS+eps) W
 *   attn_pre_proj  [M, H] x [H, (heads + 2 kv_heads) hd / t]
 *   attn_rope      Y[m,r,i] = X[m,r,i] C[m,i] + X[m,r,i] S[m,i] over the
 *                  (heads + kv_heads) / t heads of Q and K
 *   attn_post_proj [M, H / t] x [H / t, H]
 *   mlp_up_proj    [M, H] x [H, (2 if gated) F / t]
 *   mlp_act        silu(G) U over [M, F / t], or gelu(X)
 *   mlp_down_proj  [M, F / t] x [F / t, H]
 *   add            the residual: two inputs, or three in a parallel
 *                  block
 *
 * and the kernel each runs as (vidur_op_kernel), from the kernels' code:
 * Sarathi-Serve's csrc/ (rms_norm_kernel, silu_and_mul_kernel,
 * rotary_embedding_kernel: one block per token, each thread looping over
 * the row one 2-byte element at a time, every step a load waited for,
 * then a store) and PyTorch's (the embedding is index_select,
 * aten/src/ATen/native/cuda/Indexing.cu: up to 16 indices, each thread
 * loops over them, else a grid-stride loop over the elements in at most
 * 8 blocks of 128 per SM, each element its index then its row's element,
 * two dependent loads; the add and GELU are the vectorized elementwise
 * kernel of Loops.cuh / CUDALoops.cuh: 128 threads of 4 elements per
 * block, one step). */
#include "validate.h"

#include <math.h>

/* A GEMM Y[M, N] = X[M, K] W[K, N]. */
static void gemm(Buf *b, long m, long k, long n) {
  buf_printf(b,
             "shape: {M: %ld, K: %ld, N: %ld}\n"
             "outputs: [Y]\n"
             "einsum:\n"
             "  declaration: {X: [M, K], W: [K, N], Y: [M, N]}\n"
             "  expressions:\n"
             "    - Y[m,n] = X[m,k] * W[k,n]\n",
             m, k, n);
}

static void rmsnorm(Buf *b, long m, long h) {
  buf_printf(b,
             "params: {eps: 1e-6}\n"
             "shape: {M: %ld, H: %ld}\n"
             "outputs: [Y]\n"
             "einsum:\n"
             "  declaration: {X: [M, H], W: [H], SS: [M], Y: [M, H]}\n"
             "  expressions:\n"
             "    - SS[m] = X[m,h] * X[m,h] / H\n"
             "    - Y[m,h] = X[m,h] * rsqrt(SS[m] + eps) * W[h]\n",
             m, h);
}

static void elementwise(Buf *b, long m, long h, const char *decl,
                        const char *expr) {
  buf_printf(b,
             "shape: {M: %ld, H: %ld}\n"
             "outputs: [Y]\n"
             "einsum:\n"
             "  declaration: {%s}\n"
             "  expressions:\n"
             "    - %s\n",
             m, h, decl, expr);
}

void vidur_op_spec(VidurOp op, const VidurRow *r, Buf *b) {
  long m = r->tokens, h = r->embd, t = r->tp, hd = r->embd / r->heads;
  long f = r->expanded / t;
  switch (op) {
  case VOP_EMB:
    elementwise(b, m, h, "T: [M, H], Y: [M, H]", "Y[m,h] = T[m,h]");
    return;
  case VOP_INPUT_NORM:
  case VOP_POST_NORM:
    rmsnorm(b, m, h);
    return;
  case VOP_QKV:
    gemm(b, m, h, (r->heads + 2L * r->kv_heads) * hd / t);
    return;
  case VOP_ROPE:
    buf_printf(b,
               "shape: {M: %ld, R: %ld, I: %ld}\n"
               "outputs: [Y]\n"
               "einsum:\n"
               "  declaration: {X: [M, R, I], C: [M, I], S: [M, I], "
               "Y: [M, R, I]}\n"
               "  expressions:\n"
               "    - Y[m,r,i] = X[m,r,i] * C[m,i] + X[m,r,i] * S[m,i]\n",
               m, (r->heads + (long)r->kv_heads) / t, hd);
    return;
  case VOP_O_PROJ:
    gemm(b, m, h / t, h);
    return;
  case VOP_UP:
    gemm(b, m, h, (r->gated ? 2 : 1) * f);
    return;
  case VOP_ACT:
    if (r->gated)
      elementwise(b, m, f, "G: [M, H], U: [M, H], Y: [M, H]",
                  "Y[m,h] = silu(G[m,h]) * U[m,h]");
    else
      elementwise(b, m, f, "X: [M, H], Y: [M, H]", "Y[m,h] = gelu(X[m,h])");
    return;
  case VOP_DOWN:
    gemm(b, m, f, h);
    return;
  case VOP_ADD:
    if (r->add_inputs == 3)
      elementwise(b, m, h, "A: [M, H], B: [M, H], R: [M, H], Y: [M, H]",
                  "Y[m,h] = A[m,h] + B[m,h] + R[m,h]");
    else
      elementwise(b, m, h, "A: [M, H], R: [M, H], Y: [M, H]",
                  "Y[m,h] = A[m,h] + R[m,h]");
    return;
  case VOP_COUNT:
    break;
  }
}

/* A kernel of one block per token, BLOCK threads stepping over a row of
 * N elements PASSES times. */
static GpuKernel per_token(long m, long n, long block, int passes) {
  block = n < block ? n : block;
  return (GpuKernel){(double)m, (int)block, 0,
                     passes * ceil((double)n / block)};
}

/* PyTorch's vectorized elementwise kernel over N elements. */
static GpuKernel vectorized(double n) {
  return (GpuKernel){ceil(n / 512), 128, 0, 1};
}

GpuKernel vidur_op_kernel(VidurOp op, const VidurRow *r) {
  long m = r->tokens, h = r->embd, t = r->tp, hd = r->embd / r->heads;
  long f = r->expanded / t;
  switch (op) {
  case VOP_EMB:
    if (m <= 16) /* indexSelectSmallIndex: the indices one after another */
      return (GpuKernel){ceil(h / 128.0), 128, 0, 2.0 * m};
    return (GpuKernel){ceil((double)m * h / 128), 128, 8, 2};
  case VOP_INPUT_NORM:
  case VOP_POST_NORM: /* the sum of squares, then the scaled row */
    return per_token(m, h, 1024, 2);
  case VOP_ROPE: { /* the position's cos/sin, then Q's pairs, K's pairs */
    long q = r->heads / t * hd / 2, k = r->kv_heads / t * hd / 2;
    GpuKernel g = per_token(m, q, 512, 1);
    g.steps += 1 + ceil((double)k / g.block);
    return g;
  }
  case VOP_ACT:
    if (r->gated)
      return per_token(m, f, 1024, 1);
    return vectorized((double)m * f);
  case VOP_ADD:
    return vectorized((double)m * h);
  case VOP_QKV:
  case VOP_O_PROJ:
  case VOP_UP:
  case VOP_DOWN:
  case VOP_COUNT:
    break;
  }
  return (GpuKernel){0, 1, 0, 0};
}
