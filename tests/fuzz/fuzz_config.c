/* fuzz_config.c — libFuzzer harness for config.json, through model
 * construction: whatever the bytes, parsing returns a config or a
 * diagnostic; an accepted config builds a model from a tiny checkpoint
 * (Mamba-1 or Mamba-2: d_model 8, 2 layers, vocab 16) or says why not,
 * and a model that builds runs two tokens. Sizes are counted first, as
 * the CLI does, so a config of 2^31 layers is refused rather than
 * allocated. The same bytes as a whole model (src/net/: any model type):
 * read or refused, its parameters counted from its blocks, and priced
 * end to end (a prompt of 4, 2 decode steps) on the shipped mambalaya.
 * Never a crash, a leak or a sanitizer report. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../src/embed/embed.h"
#include "../../src/lm/lm.h"
#include "../../src/net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The two tiny checkpoints, made once: the harness's own state. */
static Tensors tiny[2];

static void make_tiny(int version, Tensors *out) {
  ModelConfig c;
  Diag d = {0};
  Setting sizes[] = {{"d_model", 8}, {"n_layer", 2}, {"vocab", 16},
                     {"d_state", 4}, {"head_dim", 4}};
  if (!lm_config_resolve(version == 1 ? "mamba-130m" : "mamba2-130m", sizes,
                         5, &c, &d))
    __builtin_trap();
  Checkpoint ck = lm_random_checkpoint(&c, 1);
  CkptKey *keys;
  int n = lm_checkpoint_keys(&c, &keys);
  for (int i = 0; i < n; i++)
    tensors_put(out, keys[i].name, ck.get(&ck, keys[i].name), true);
  free(keys);
}

/* The whole model the bytes describe, if any: counted and priced. */
static void whole_model(const uint8_t *data, size_t size) {
  static Arch *arch; /* the harness's own state, made once */
  if (!arch) {
    const EmbeddedFile *f = embedded_file("archs/mambalaya.yaml");
    Diag ad = {0};
    if (!f || !(arch = arch_parse(f->name, (const char *)f->data, f->len,
                                  &ad)))
      __builtin_trap();
  }
  Net *net = malloc(sizeof *net);
  Diag d = {0};
  if (net && net_config_parse("config.json", (const char *)data, size, net,
                              &d)) {
    NetParams p;
    if (net_params(net, &p, &d) && !(p.total >= 0 && p.active <= p.total))
      __builtin_trap();
    NetOpts o = net_default_opts();
    o.prompt = 4;
    o.generate = 2;
    NetRun *r = malloc(sizeof *r);
    if (r && net_run(net, arch, &o, r, NULL, &d) &&
        !(r->ttft >= 0 && r->tpot_first >= 0))
      __builtin_trap();
    free(r);
  }
  free(net);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  whole_model(data, size);
  if (!tiny[0].n) {
    make_tiny(1, &tiny[0]);
    make_tiny(2, &tiny[1]);
  }
  ModelConfig cfg;
  Diag d = {0};
  if (!model_config_parse("config.json", (const char *)data, size, &cfg, &d))
    return 0;
  uint64_t params;
  if (!lm_param_count(&cfg, &params) || params > 100000)
    return 0; /* the CLI refuses it for memory before building */
  Checkpoint ck = checkpoint_of_tensors(&tiny[cfg.version == 2], "tiny");
  Diag md = {0};
  Lm *m = lm_new(&cfg, &ck, NULL, &md);
  if (!m)
    return 0;
  int tokens[2] = {1, 2 % cfg.vocab};
  LmOpts o = {0};
  Array *logits = NULL;
  Diag rd = {0};
  if (lm_forward(m, tokens, 1, 2, &o, &logits, NULL, &rd) &&
      logits->n != 2 * (int64_t)cfg.vocab)
    __builtin_trap();
  array_free(logits);
  lm_free(m);
  return 0;
}
