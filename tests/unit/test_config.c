/* test_config.c — model configurations: both published config.json forms,
 * padding and defaults, rejection of inconsistent sizes, save and load. */
#include <stdlib.h>
#include <unistd.h>

#include "../../src/lm/lm.h"
#include "test.h"

static void config_path(char *out, size_t cap, const char *tag) {
  snprintf(out, cap, "/tmp/mambalaya-unit-%ld-%s.json", (long)getpid(), tag);
}

/* Load TEXT as a config file; false (and *d set) if rejected. */
static bool load_text(const char *text, ModelConfig *c, Diag *d) {
  char path[256];
  config_path(path, sizeof path, "config");
  CHECK(write_file_atomic(path, text, strlen(text)));
  bool ok = model_config_load(path, c, d);
  remove(path);
  return ok;
}

#define CHECK_CONFIG(a, b)                                                     \
  do {                                                                         \
    CHECK_INT((a).version, (b).version);                                       \
    CHECK_INT((a).d_model, (b).d_model);                                       \
    CHECK_INT((a).n_layer, (b).n_layer);                                       \
    CHECK_INT((a).vocab, (b).vocab);                                           \
    CHECK_INT((a).d_state, (b).d_state);                                       \
    CHECK_INT((a).d_conv, (b).d_conv);                                         \
    CHECK_INT((a).expand, (b).expand);                                         \
    CHECK_INT((a).d_inner, (b).d_inner);                                       \
    CHECK_INT((a).dt_rank, (b).dt_rank);                                       \
    CHECK_INT((a).head_dim, (b).head_dim);                                       \
    CHECK_INT((a).n_heads, (b).n_heads);                                         \
    CHECK_INT((a).ngroups, (b).ngroups);                                       \
  } while (0)

static ModelConfig preset_config(const char *name) {
  ModelConfig c;
  model_config_from_preset(preset_find(name), &c);
  return c;
}

TEST(config_from_preset) {
  ModelConfig c = preset_config("mamba-370m");
  CHECK_INT(c.version, 1);
  CHECK_INT(c.d_model, 1024);
  CHECK_INT(c.n_layer, 48);
  CHECK_INT(c.d_inner, 2048);
  CHECK_INT(c.dt_rank, 64);
  CHECK_INT(c.d_state, 16);
  CHECK_INT(c.vocab, 50280);
  CHECK_INT(c.n_heads, 0);
  ModelConfig m2 = preset_config("mamba2-2.7b");
  CHECK_INT(m2.version, 2);
  CHECK_INT(m2.n_heads, 80);
  CHECK_INT(m2.head_dim, 64);
  CHECK_INT(m2.ngroups, 1);
  CHECK_INT(m2.d_state, 128);
  CHECK_INT(m2.dt_rank, 0);
}

/* The config.json files as published (state-spaces/mamba-130m, ...). */
TEST(config_state_spaces_published_files) {
  ModelConfig c;
  Diag d = {0};
  CHECK(load_text("{\"d_model\": 768, \"n_layer\": 24, \"vocab_size\": 50277,"
                  " \"ssm_cfg\": {}, \"rms_norm\": true, \"residual_in_fp32\":"
                  " true, \"fused_add_norm\": true, \"pad_vocab_size_multiple\""
                  ": 8}",
                  &c, &d));
  ModelConfig want = preset_config("mamba-130m");
  CHECK_CONFIG(c, want); /* vocab 50277 padded to 50280 */

  CHECK(
      load_text("{\"d_model\": 768, \"d_intermediate\": 0, \"n_layer\": 24,"
                " \"vocab_size\": 50277, \"ssm_cfg\": {\"layer\": \"Mamba2\"},"
                " \"attn_layer_idx\": [], \"attn_cfg\": {}, \"rms_norm\":"
                " true, \"residual_in_fp32\": true, \"fused_add_norm\": true,"
                " \"pad_vocab_size_multiple\": 16, \"tie_embeddings\": true}",
                &c, &d));
  want = preset_config("mamba2-130m");
  CHECK_CONFIG(c, want); /* 50288, 24 heads of 64 */
  if (d.failed)
    test_fail(__FILE__, __LINE__, "%s", d.msg);
}

TEST(config_state_spaces_values_and_defaults) {
  ModelConfig c;
  Diag d = {0};
  /* Nothing but the required sizes: Mamba-1 defaults, no padding. */
  CHECK(load_text("{\"d_model\": 100, \"n_layer\": 2, \"vocab_size\": 1001}",
                  &c, &d));
  CHECK_INT(c.version, 1);
  CHECK_INT(c.vocab, 1001);
  CHECK_INT(c.d_state, 16);
  CHECK_INT(c.d_conv, 4);
  CHECK_INT(c.expand, 2);
  CHECK_INT(c.d_inner, 200);
  CHECK_INT(c.dt_rank, 7); /* ceil(100 / 16) */
  /* Every value given. */
  CHECK(load_text("{\"d_model\": 64, \"n_layer\": 3, \"vocab_size\": 1001,"
                  " \"pad_vocab_size_multiple\": 16, \"ssm_cfg\": {\"layer\":"
                  " \"Mamba1\", \"d_state\": 8, \"d_conv\": 3, \"expand\": 3,"
                  " \"dt_rank\": \"auto\"}}",
                  &c, &d));
  CHECK_INT(c.vocab, 1008);
  CHECK_INT(c.d_state, 8);
  CHECK_INT(c.d_conv, 3);
  CHECK_INT(c.d_inner, 192);
  CHECK_INT(c.dt_rank, 4);
  CHECK(load_text("{\"d_model\": 64, \"n_layer\": 3, \"vocab_size\": 16,"
                  " \"ssm_cfg\": {\"dt_rank\": 5}}",
                  &c, &d));
  CHECK_INT(c.dt_rank, 5);
  /* Mamba-2 with its own head size and groups. */
  CHECK(load_text("{\"d_model\": 256, \"n_layer\": 4, \"vocab_size\": 512,"
                  " \"ssm_cfg\": {\"layer\": \"Mamba2\", \"d_state\": 64,"
                  " \"headdim\": 32, \"ngroups\": 4, \"d_conv\": 4}}",
                  &c, &d));
  CHECK_INT(c.version, 2);
  CHECK_INT(c.d_inner, 512);
  CHECK_INT(c.head_dim, 32);
  CHECK_INT(c.n_heads, 16);
  CHECK_INT(c.ngroups, 4);
  CHECK_INT(c.d_state, 64);
  CHECK_INT(c.dt_rank, 0);
  if (d.failed)
    test_fail(__FILE__, __LINE__, "%s", d.msg);
}

/* state-spaces/mamba-130m-hf's config.json (abridged only of keys that do
 * not affect sizes). It carries d_model too: model_type decides the form. */
TEST(config_hugging_face_files) {
  ModelConfig c;
  Diag d = {0};
  CHECK(load_text(
      "{\"architectures\": [\"MambaForCausalLM\"], \"bos_token_id\": 0,"
      " \"conv_kernel\": 4, \"d_inner\": 1536, \"d_model\": 768,"
      " \"expand\": 2, \"hidden_act\": \"silu\", \"hidden_size\": 768,"
      " \"initializer_range\": 0.1, \"intermediate_size\": 1536,"
      " \"layer_norm_epsilon\": 1e-05, \"model_type\": \"mamba\","
      " \"n_layer\": 24, \"num_hidden_layers\": 24, \"pad_token_id\": 0,"
      " \"pad_vocab_size_multiple\": 8, \"rms_norm\": true, \"state_size\":"
      " 16, \"time_step_rank\": 48, \"time_step_scale\": 1.0,"
      " \"use_bias\": false, \"use_conv_bias\": true, \"vocab_size\": 50280}",
      &c, &d));
  ModelConfig want = preset_config("mamba-130m");
  CHECK_CONFIG(c, want);

  CHECK(load_text("{\"model_type\": \"mamba2\", \"hidden_size\": 2560,"
                  " \"num_hidden_layers\": 64, \"vocab_size\": 50288,"
                  " \"state_size\": 128, \"expand\": 2, \"conv_kernel\": 4,"
                  " \"head_dim\": 64, \"num_heads\": 80, \"n_groups\": 1,"
                  " \"time_step_rank\": 160, \"chunk_size\": 256}",
                  &c, &d));
  want = preset_config("mamba2-2.7b");
  CHECK_CONFIG(c, want);

  /* Defaults: time_step_rank "auto", Mamba-2 head size 64 and 1 group. */
  CHECK(load_text("{\"model_type\": \"mamba\", \"hidden_size\": 40,"
                  " \"num_hidden_layers\": 1, \"vocab_size\": 10,"
                  " \"time_step_rank\": \"auto\"}",
                  &c, &d));
  CHECK_INT(c.dt_rank, 3);
  CHECK_INT(c.d_inner, 80);
  CHECK(load_text("{\"model_type\": \"mamba2\", \"hidden_size\": 64,"
                  " \"num_hidden_layers\": 1, \"vocab_size\": 10}",
                  &c, &d));
  CHECK_INT(c.d_state, 128);
  CHECK_INT(c.head_dim, 64);
  CHECK_INT(c.n_heads, 2);
  CHECK_INT(c.ngroups, 1);
  if (d.failed)
    test_fail(__FILE__, __LINE__, "%s", d.msg);
}

static void expect_config_error(int line, const char *text, const char *part) {
  ModelConfig c = {0};
  Diag d = {0};
  if (load_text(text, &c, &d))
    test_fail(__FILE__, line, "accepted, expected '%s'", part);
  else if (!strstr(d.msg, part))
    test_fail(__FILE__, line, "message '%s' lacks '%s'", d.msg, part);
}

TEST(config_rejects_inconsistent_values) {
  expect_config_error(__LINE__, "[1]", "must be a JSON object");
  expect_config_error(__LINE__, "{\"n_layer\": 2}", "not a Mamba config");
  expect_config_error(__LINE__, "{\"d_model\": 64, \"vocab_size\": 8}",
                      "missing \"n_layer\"");
  expect_config_error(__LINE__,
                      "{\"d_model\": 0, \"n_layer\": 1, \"vocab_size\": 8}",
                      "\"d_model\" must be a positive integer");
  expect_config_error(__LINE__,
                      "{\"d_model\": 64, \"n_layer\": -1, \"vocab_size\": 8}",
                      "\"n_layer\" must be a positive integer");
  expect_config_error(__LINE__,
                      "{\"d_model\": 64.5, \"n_layer\": 1, \"vocab_size\": 8}",
                      "\"d_model\" must be a positive integer");
  expect_config_error(__LINE__,
                      "{\"d_model\": 64, \"n_layer\": 1, \"vocab_size\": 8,"
                      " \"ssm_cfg\": {\"layer\": \"Mamba3\"}}",
                      "ssm_cfg.layer must be \"Mamba1\" or \"Mamba2\"");
  expect_config_error(__LINE__,
                      "{\"d_model\": 100, \"n_layer\": 1, \"vocab_size\": 8,"
                      " \"ssm_cfg\": {\"layer\": \"Mamba2\"}}",
                      "d_inner 200 is not divisible by head_dim 64");
  expect_config_error(__LINE__,
                      "{\"d_model\": 64, \"n_layer\": 1, \"vocab_size\": 8,"
                      " \"ssm_cfg\": {\"d_conv\": 0}}",
                      "\"d_conv\" must be a positive integer");
  expect_config_error(__LINE__,
                      "{\"d_model\": 64, \"n_layer\": 1, \"vocab_size\": 8,"
                      " \"ssm_cfg\": {\"dt_rank\": \"big\"}}",
                      "\"dt_rank\" must be a positive integer or \"auto\"");
  expect_config_error(__LINE__,
                      "{\"d_model\": 64, \"n_layer\": 1, \"vocab_size\": 8,"
                      " \"ssm_cfg\": {\"layer\": \"Mamba2\", \"ngroups\": 3}}",
                      "cannot be split into 3 groups");
  expect_config_error(__LINE__,
                      "{\"d_model\": 64, \"n_layer\": 1, \"vocab_size\": 8,"
                      " \"d_intermediate\": 128}",
                      "MLP layers are not supported");
  expect_config_error(__LINE__,
                      "{\"model_type\": \"jamba\", \"hidden_size\": 64}",
                      "model_type must be \"mamba\" or \"mamba2\"");
  expect_config_error(__LINE__,
                      "{\"model_type\": \"mamba\", \"hidden_size\": 64,"
                      " \"num_hidden_layers\": 1, \"vocab_size\": 8,"
                      " \"intermediate_size\": 100}",
                      "intermediate_size 100 is not expand * d_model");
  expect_config_error(__LINE__,
                      "{\"model_type\": \"mamba2\", \"hidden_size\": 64,"
                      " \"num_hidden_layers\": 1, \"vocab_size\": 8,"
                      " \"num_heads\": 3}",
                      "num_heads 3 is not d_inner / head_dim = 128 / 64 = 2");
  expect_config_error(__LINE__,
                      "{\"d_model\": 2000000000, \"n_layer\": 1,"
                      " \"vocab_size\": 8}",
                      "is too large");
  expect_config_error(__LINE__, "{\"d_model\": 64, \"d_model\": 64}",
                      "duplicate");

  /* A JSON syntax error keeps jansson's line and column. */
  ModelConfig c;
  Diag d = {0};
  CHECK(!load_text("{\n  \"d_model\": 64,\n  oops\n}", &c, &d));
  CHECK_INT(d.loc.line, 3);
  Diag e = {0};
  CHECK(!model_config_load("/nonexistent/config.json", &c, &e));
  CHECK(strstr(e.msg, "cannot read") != NULL);
}

TEST(config_save_and_load_round_trip) {
  const char *names[] = {"mamba-130m", "mamba-2.8b", "mamba2-780m",
                         "mamba2-1.3b"};
  char path[256];
  config_path(path, sizeof path, "saved");
  for (int i = 0; i < 4; i++) {
    ModelConfig want = preset_config(names[i]), got = {0};
    Diag d = {0};
    CHECK(model_config_save(&want, path, &d));
    CHECK(model_config_load(path, &got, &d));
    CHECK_CONFIG(got, want);
  }
  /* The file is the state-spaces form, with the layer named. */
  size_t len;
  char *text = read_file(path, &len);
  remove(path);
  CHECK(text && strstr(text, "\"layer\": \"Mamba2\"") != NULL);
  CHECK(text && strstr(text, "\"d_model\": 2048") != NULL);
  free(text);
  /* An odd vocabulary survives (it is not padded again). */
  ModelConfig odd = preset_config("mamba-130m"), back = {0};
  odd.vocab = 50277;
  Diag d = {0};
  CHECK(model_config_save(&odd, path, &d));
  CHECK(model_config_load(path, &back, &d));
  remove(path);
  CHECK_INT(back.vocab, 50277);
}

/* Sizes at the 32-bit limit load without overflow (UBSan watches this
 * test under `make test`); the parameter count says it does not fit; a
 * model built from them against a small checkpoint fails with a message;
 * /dev/zero is not a config. */
TEST(config_extreme_sizes) {
  ModelConfig c = {0};
  Diag d = {0};
  CHECK(load_text("{\"d_model\": 1, \"n_layer\": 2147483647, \"vocab_size\":"
                  " 2147483647, \"ssm_cfg\": {\"d_state\": 2147483647,"
                  " \"expand\": 2147483647, \"d_conv\": 2147483647}}",
                  &c, &d));
  CHECK_INT(c.d_inner, 2147483647);
  CHECK_INT(c.dt_rank, 1);
  uint64_t params = 0;
  CHECK(!lm_param_count(&c, &params)); /* far past 2^64 */
  ModelConfig small = c;
  small.n_layer = 2;
  small.vocab = 4;
  small.d_state = small.d_conv = small.expand = small.d_inner = 3;
  CHECK(lm_param_count(&small, &params));
  /* embedding 4, norm_f 1; per layer: norm 1, in_proj 6, conv 9 + 3,
   * x_proj 7 * 3, dt_proj 3 + 3, A_log 9, D 3, out_proj 3. */
  CHECK_INT(params, 5 + 2 * (1 + 6 + 12 + 21 + 6 + 9 + 3 + 3));

  Tensors ck = {0};
  tensors_put(&ck, "backbone.embeddings.weight",
              array_new(2, (int64_t[]){4, 1}), true);
  tensors_put(&ck, "backbone.norm_f.weight", array_new(1, (int64_t[]){1}),
              true);
  Checkpoint src = checkpoint_of_tensors(&ck, "tiny");
  Diag e = {0};
  Lm *m = lm_new(&c, &src, NULL, &e);
  CHECK(m == NULL);
  CHECK(strstr(e.msg, "the embedding has shape [4, 1], but the config says "
                      "[2147483647, 1]") != NULL);
  lm_free(m);
  c.vocab = 4;
  Diag f = {0};
  CHECK(lm_new(&c, &src, NULL, &f) == NULL);
  CHECK(strstr(f.msg, "backbone.layers.2147483646.") != NULL);
  CHECK(strstr(f.msg, "(the config has 2147483647 layers)") != NULL);
  tensors_free(&ck);

  Diag g = {0};
  CHECK(!model_config_load("/dev/zero", &c, &g));
  CHECK(strstr(g.msg, "a character device, not a regular file") != NULL);
}
